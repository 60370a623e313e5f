package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSlurmConfExample keeps slurm.conf.example the configuration of the
// cluster it says it is (docs/examples/lab16.yaml): its node line has
// lab16's CPUs, cores and memory, and its Features=, topology.conf and
// gres.conf lines are what `gangtopo gen features|topology|gres` print for
// lab16.
func TestSlurmConfExample(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	example, err := os.ReadFile(filepath.Join("..", "..", "slurm.conf.example"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadCluster(lab)
	if err != nil {
		t.Fatal(err)
	}
	n := &c.Nodes[0]
	def := lineWith(t, example, "NodeName=DEFAULT ")
	kv := fields(def)
	cores := atoi(kv["SocketsPerBoard"]) * atoi(kv["CoresPerSocket"])
	if atoi(kv["CPUs"]) != n.CPUs || cores*atoi(kv["ThreadsPerCore"]) != n.CPUs || atoi(kv["ThreadsPerCore"]) != n.ThreadsPerCore ||
		int64(atoi(kv["RealMemory"])) != n.MemoryMiB || kv["Gres"] != "gpu:h100:8" {
		t.Errorf("slurm.conf.example: %q does not describe lab16's nodes (%d CPUs, %d threads per core, %d MiB, 8 H100)",
			def, n.CPUs, n.ThreadsPerCore, n.MemoryMiB)
	}
	gen := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "--topology", lab), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	want := map[string]string{
		"Features=":     gen("gen", "features"),
		"# SwitchName=": gen("gen", "topology"),
		"# NodeName=":   gen("gen", "gres"),
		"# AutoDetect":  gen("gen", "gres"),
	}
	for prefix, out := range want {
		for _, line := range linesWith(example, prefix) {
			line = strings.TrimPrefix(line, "# ")
			if i := strings.Index(line, "#"); i > 0 {
				line = strings.TrimSpace(line[:i])
			}
			if !strings.Contains(out, line+"\n") {
				t.Errorf("slurm.conf.example: %q is not what gangtopo writes for lab16:\n%s", line, out)
			}
		}
	}
}

func lineWith(t *testing.T, data []byte, prefix string) string {
	t.Helper()
	l := linesWith(data, prefix)
	if len(l) != 1 {
		t.Fatalf("want one line starting %q, found %d", prefix, len(l))
	}
	return l[0]
}

// linesWith returns the lines that start with prefix, or that hold it
// after a NodeName= (Features= on a node line).
func linesWith(data []byte, prefix string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		} else if !strings.HasPrefix(prefix, "#") && strings.HasPrefix(l, "NodeName=") && strings.Contains(l, " "+prefix) {
			out = append(out, l)
		}
	}
	return out
}

func fields(line string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
