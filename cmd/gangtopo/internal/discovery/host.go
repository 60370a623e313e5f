package discovery

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Host is the CPU and memory side of a node.
type Host struct {
	CPUs           int        `json:"cpus"`                       // logical CPUs online
	ThreadsPerCore int        `json:"threads_per_core,omitempty"` // 0 when unknown
	MemoryMiB      int64      `json:"memory_mib"`
	NUMA           []NUMANode `json:"numa,omitempty"`
}

// NUMANode is one NUMA node with its CPUs as a Linux cpulist ("0-55,112-167").
type NUMANode struct {
	ID        int    `json:"id"`
	CPUs      string `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
}

// readHost reads CPUs and memory from root/devices/system. Memory is the
// sum of the NUMA nodes' MemTotal; a kernel without NUMA nodes in sysfs
// gives CPUs from cpu/online and no memory (with a warning).
func readHost(root string) (Host, []string, error) {
	var h Host
	var warns []string
	sys := filepath.Join(root, "devices", "system")
	nodes, err := filepath.Glob(filepath.Join(sys, "node", "node[0-9]*"))
	if err != nil {
		return h, nil, err
	}
	for _, dir := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		n := NUMANode{ID: id}
		if b, err := os.ReadFile(filepath.Join(dir, "cpulist")); err == nil {
			n.CPUs = strings.TrimSpace(string(b))
		}
		if n.MemoryMiB, err = nodeMemTotal(filepath.Join(dir, "meminfo")); err != nil {
			return h, nil, err
		}
		h.NUMA = append(h.NUMA, n)
		h.MemoryMiB += n.MemoryMiB
	}
	sort.Slice(h.NUMA, func(a, b int) bool { return h.NUMA[a].ID < h.NUMA[b].ID })
	online, err := os.ReadFile(filepath.Join(sys, "cpu", "online"))
	if err != nil {
		return h, nil, fmt.Errorf("sysfs: %w (is %s a sysfs tree?)", err, root)
	}
	cpus, err := ParseCPUList(strings.TrimSpace(string(online)))
	if err != nil {
		return h, nil, fmt.Errorf("sysfs: %s: %w", filepath.Join(sys, "cpu", "online"), err)
	}
	h.CPUs = len(cpus)
	if sib, err := os.ReadFile(filepath.Join(sys, "cpu", "cpu0", "topology", "thread_siblings_list")); err == nil {
		if s, err := ParseCPUList(strings.TrimSpace(string(sib))); err == nil {
			h.ThreadsPerCore = len(s)
		}
	}
	if len(nodes) == 0 {
		warns = append(warns, "sysfs has no NUMA nodes: memory and GPU NUMA placement unknown")
	}
	return h, warns, nil
}

// nodeMemTotal reads "Node 0 MemTotal:  528031744 kB" from a node's meminfo.
func nodeMemTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 4 && fs[2] == "MemTotal:" {
			kb, err := strconv.ParseInt(fs[3], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad MemTotal %q", path, fs[3])
			}
			return kb >> 10, nil
		}
	}
	return 0, sc.Err()
}

// maxCPUListEntries bounds what ParseCPUList expands (the largest Linux
// NR_CPUS is 8192; GPU lists are far smaller).
const maxCPUListEntries = 1 << 16

// ParseCPUList expands a Linux cpulist ("0-3,8,10-11") into CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad cpulist %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad cpulist %q", s)
			}
		}
		if a < 0 || b-a >= maxCPUListEntries-len(out) {
			return nil, fmt.Errorf("cpulist %q is out of range", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
