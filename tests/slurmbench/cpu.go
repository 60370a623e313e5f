package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// The throughput figures alone move a lot on a shared 2-core machine; the
// CPU time each mode costs moves less, and says where the difference goes:
// slurmctld (the plugin runs inside it) or the rest (sbatch, munged).

// clockTick is the kernel's USER_HZ, the unit of /proc CPU times; 100 on
// every Linux this lab runs on.
const clockTick = 100

// cpuUse is CPU time spent, by slurmctld (all its threads) and by the whole
// machine.
type cpuUse struct{ ctld, machine time.Duration }

func (a cpuUse) sub(b cpuUse) cpuUse { return cpuUse{a.ctld - b.ctld, a.machine - b.machine} }
func (a cpuUse) add(b cpuUse) cpuUse { return cpuUse{a.ctld + b.ctld, a.machine + b.machine} }

// readCPU reads slurmctld's user+system time (/proc/PID/stat fields 14
// and 15) and the machine's busy time (/proc/stat, all but idle and
// iowait). A value it cannot read is zero.
func readCPU(ctldPID int) cpuUse {
	var u cpuUse
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(ctldPID) + "/stat"); err == nil {
		s := string(data)
		// the command name may hold spaces: fields count from its ')'
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				u.ctld = ticks(f[11]) + ticks(f[12])
			}
		}
	}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		for i, v := range strings.Fields(line)[1:] {
			if i != 3 && i != 4 { // idle, iowait
				u.machine += ticks(v)
			}
		}
	}
	return u
}

func ticks(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n) * time.Second / clockTick
}
