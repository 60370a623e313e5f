package defragrun

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/defrag"
)

// Reading Slurm's preemption rule (selector/defrag.Preemption) from the
// cluster: slurm.conf's PreemptType, PreemptMode and PreemptExemptTime
// (scontrol show config), each partition's PriorityTier and PreemptMode
// (scontrol -o show partition), and, for preempt/qos, each QOS's Preempt
// list and PreemptMode (sacctmgr, which needs slurmdbd: the QOS live in
// the accounting database).

// ParseConfigPreempt reads PreemptType, PreemptMode and PreemptExemptTime
// from `scontrol show config` ("Key = Value" lines).
func ParseConfigPreempt(out string, p *defrag.Preemption) error {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "PreemptType":
			p.Type = v
		case "PreemptMode":
			p.Mode = strings.ToUpper(v)
		case "PreemptExemptTime":
			d, err := slurmDuration(v)
			if err != nil {
				return fmt.Errorf("scontrol show config: PreemptExemptTime %q: %v", v, err)
			}
			p.ExemptTime = d
		}
	}
	if p.Type == "" {
		return fmt.Errorf("scontrol show config: no PreemptType line")
	}
	return nil
}

// ParsePartitions reads each partition's PriorityTier and PreemptMode from
// `scontrol -o show partition`.
func ParsePartitions(out string) (map[string]defrag.PartitionRule, error) {
	rules := map[string]defrag.PartitionRule{}
	for _, line := range strings.Split(out, "\n") {
		f := keyValues(line)
		name := f["PartitionName"]
		if name == "" {
			continue
		}
		tier, err := strconv.Atoi(f["PriorityTier"])
		if err != nil {
			return nil, fmt.Errorf("scontrol show partition %s: PriorityTier %q is not a number", name, f["PriorityTier"])
		}
		mode := strings.ToUpper(f["PreemptMode"])
		rules[name] = defrag.PartitionRule{PriorityTier: tier, Mode: mode}
	}
	return rules, nil
}

// ParseQOS reads `sacctmgr -nP show qos format=name,preempt,preemptmode`:
// name|preempted,qos|mode lines ("cluster" as the mode means slurm.conf's).
func ParseQOS(out string) (map[string]defrag.QOSRule, error) {
	rules := map[string]defrag.QOSRule{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("sacctmgr show qos: %q is not name|preempt|preemptmode", line)
		}
		r := defrag.QOSRule{Mode: strings.ToUpper(f[2])}
		if r.Mode == "CLUSTER" {
			r.Mode = ""
		}
		for _, q := range strings.Split(f[1], ",") {
			if q = strings.TrimSpace(q); q != "" {
				r.Preempt = append(r.Preempt, q)
			}
		}
		rules[f[0]] = r
	}
	return rules, nil
}

// slurmDuration reads Slurm's [days-]hh:mm:ss, NONE or 00:00:00.
func slurmDuration(v string) (time.Duration, error) {
	if v == "" || strings.EqualFold(v, "NONE") || strings.EqualFold(v, "(null)") {
		return 0, nil
	}
	days := 0
	if d, rest, ok := strings.Cut(v, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, fmt.Errorf("not [days-]hh:mm:ss")
		}
		days, v = n, rest
	}
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("not [days-]hh:mm:ss")
	}
	var n [3]int
	for i, s := range parts {
		x, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("not [days-]hh:mm:ss")
		}
		n[i] = x
	}
	return time.Duration(days)*24*time.Hour + time.Duration(n[0])*time.Hour + time.Duration(n[1])*time.Minute + time.Duration(n[2])*time.Second, nil
}

// ReadPreemption reads the rule from the running cluster; sacctmgr only
// when PreemptType is preempt/qos.
func (s Clients) ReadPreemption(ctx context.Context) (defrag.Preemption, error) {
	var p defrag.Preemption
	out, err := s.run(ctx, "show", "config")
	if err != nil {
		return p, err
	}
	if err := ParseConfigPreempt(out, &p); err != nil {
		return p, err
	}
	if out, err = s.run(ctx, "-o", "show", "partition"); err != nil {
		return p, err
	}
	if p.Partitions, err = ParsePartitions(out); err != nil {
		return p, err
	}
	if p.Type != defrag.PreemptQOS {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	bin := "sacctmgr"
	if s.BinDir != "" {
		bin = filepath.Join(s.BinDir, bin)
	}
	qos, err := exec.CommandContext(ctx, bin, "-nP", "show", "qos", "format=name,preempt,preemptmode").Output()
	if err != nil {
		return p, fmt.Errorf("sacctmgr show qos (preempt/qos keeps the QOS in slurmdbd): %w", err)
	}
	p.QOS, err = ParseQOS(string(qos))
	return p, err
}

// keyValues reads the Key=Value words of one `scontrol -o show partition`
// line (the first occurrence of a key wins; a value with blanks keeps
// only its first word, enough for the keys read here). A partition's
// fields are slurm.conf's, written by the site's administrators.
func keyValues(line string) map[string]string {
	f := map[string]string{}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		if _, dup := f[k]; !dup {
			f[k] = v
		}
	}
	return f
}
