package deployed

import (
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

// The deployed path is checked against a real slurmctld with the gangtopo
// plugins: `make bench-slurm-replay` drives the stock-Slurm reference
// sequences through the 16-node lab (tests/slurmbench) and records every
// step, nodes and GPU indices, in docs/bench/replay-<run>-gangtopo.csv.
// Replayed here step by step on the recorded state, the model (the same
// decision code, then the stock Slurm model placing the rewritten job)
// must predict at least 98% of the placements: node set and GPU indices,
// or pending when the job pended.
func TestDeployedMatchesTheLab(t *testing.T) {
	c := labCluster(t)
	pol := jobsubmit.DefaultPolicy()
	pol.Jobs = jobsubmit.ScopeGPU // the bench's gangtopo.yaml
	total, matched := 0, 0
	var rows []string
	for _, run := range []string{"plain", "pernode", "plain_off2", "pernode_off2"} {
		p, err := New(c, Config{Policy: pol, Slurm: stockslurm.Options{Tree: true, NoCores: true}})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := replayLabRun(t, p, c, run)
		total += n
		matched += ok
		t.Logf("%s: %d of %d placements as the lab", run, ok, n)
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %.1f%% |", run, n, ok, 100*float64(ok)/float64(max(n, 1))))
	}
	if *matchDoc != "" {
		writeMatchDoc(t, rows, total, matched)
	}
	if total == 0 || float64(matched) < 0.98*float64(total) {
		t.Errorf("the deployed model predicts %d of %d placements of the real slurmctld with the plugins, want >= 98%%", matched, total)
	}
}

var matchDoc = flag.String("matchdoc", "", "write the match table into this Markdown file's deployed-match section")

// writeMatchDoc writes the table of TestDeployedMatchesTheLab into the
// benchmarks document (make bench-slurm-replay runs it after recording).
func writeMatchDoc(t *testing.T, rows []string, total, matched int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("## The deployed-path model vs. a real slurmctld with the plugins\n\n")
	b.WriteString("`selector/sim/deployed` (the `gangtopo-slurm` policy: the plugin's own decision code, then the stock Slurm model " +
		"placing the rewritten job) replayed step by step on the states the lab recorded above (docs/bench/replay-*-gangtopo.csv: " +
		"the reference sequences driven through slurmctld 22.05.8 with both plugins, `jobs: gpu`). A submission matches when the " +
		"model starts it on the same nodes with the same GPU indices, or leaves it pending as the lab did. Target: at least 98%. " +
		"Written by `make bench-slurm-replay`:\n\n")
	b.WriteString("    go test ./selector/sim/deployed -run TestDeployedMatchesTheLab -count=1 -args -matchdoc $PWD/docs/benchmarks.md\n\n")
	b.WriteString("| run | submissions | matched | share |\n|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	fmt.Fprintf(&b, "| all | %d | %d | %.1f%% |\n\n", total, matched, 100*float64(matched)/float64(max(total, 1)))
	if err := docsection.Replace(*matchDoc, "deployed-match", b.String()); err != nil {
		t.Fatal(err)
	}
}

func labCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "docs", "examples", "lab16.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, "lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replayLabRun replays one recorded run; it returns the submissions and
// how many the model predicted.
func replayLabRun(t *testing.T, p *Path, c *topology.Cluster, run string) (int, int) {
	path := filepath.Join("..", "..", "..", "docs", "bench", "replay-"+run+"-gangtopo.csv")
	rows := readSteps(t, path)
	s := occupancy.New(c)
	total, matched := 0, 0
	for _, row := range rows {
		alloc, err := labAlloc(c, row["gpu_idx_per_node"])
		if err != nil {
			t.Fatalf("%s step %s: %v", path, row["step"], err)
		}
		if row["action"] == "cancel" {
			if err := s.Release(alloc); err != nil {
				t.Fatalf("%s step %s: %v", path, row["step"], err)
			}
			continue
		}
		job := flagsJob(t, row["flags"])
		res, err := p.Submit(s, job)
		if err != nil {
			t.Fatal(err)
		}
		got, started, err := p.Start(s, res.Apply(job), nil)
		if err != nil {
			t.Fatal(err)
		}
		total++
		want := row["state"] == "RUNNING"
		if started == want && (!want || sameAlloc(got, alloc)) {
			matched++
		} else {
			t.Logf("%s step %s (%s): lab %s %s, model started %v on %s; decision %s", run, row["step"], row["flags"],
				row["state"], row["gpu_idx_per_node"], started, describe(c, got), res.Decision)
		}
		if want {
			if err := s.Allocate(alloc); err != nil {
				t.Fatalf("%s step %s: %v", path, row["step"], err)
			}
		}
	}
	return total, matched
}

func readSteps(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%s: %v (%d rows)", path, err, len(recs))
	}
	if !slices.Contains(recs[0], "gpu_idx_per_node") {
		t.Fatalf("%s has no gpu_idx_per_node column: rerun make bench-slurm-replay", path)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, k := range recs[0] {
			m[k] = rec[i]
		}
		out = append(out, m)
	}
	return out
}

// labAlloc reads "node01:0-3;node02:0-1": whole GPUs, one CPU each (the
// sequences ask --cpus-per-gpu=1).
func labAlloc(c *topology.Cluster, s string) (occupancy.Allocation, error) {
	var a occupancy.Allocation
	for _, part := range strings.Split(s, ";") {
		if part == "" {
			continue
		}
		name, list, _ := strings.Cut(part, ":")
		id, ok := c.NodeByName(name)
		if !ok {
			return a, fmt.Errorf("unknown node %q", name)
		}
		gpus, err := hostlist.Indices(list, 64)
		if err != nil {
			return a, err
		}
		a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: id, GPUs: gpus, Milli: occupancy.WholeGPU, CPUMilli: int32(1000 * len(gpus))})
	}
	return a, nil
}

// flagsJob is the job_desc of the sequences' two styles: --gpus=G
// --cpus-per-gpu=1, and -N n --gpus-per-node=8 --cpus-per-gpu=1.
func flagsJob(t *testing.T, flags string) jobsubmit.Job {
	t.Helper()
	var j jobsubmit.Job
	fs := strings.Fields(flags)
	for i := 0; i < len(fs); i++ {
		f := fs[i]
		switch {
		case strings.HasPrefix(f, "--gpus="):
			j.TresPerJob = "gres:gpu:" + strings.TrimPrefix(f, "--gpus=")
		case strings.HasPrefix(f, "--gpus-per-node="):
			j.TresPerNode = "gres:gpu:" + strings.TrimPrefix(f, "--gpus-per-node=")
		case strings.HasPrefix(f, "--cpus-per-gpu="):
			j.CPUsPerTres = "gres:gpu:" + strings.TrimPrefix(f, "--cpus-per-gpu=")
		case f == "-N" && i+1 < len(fs):
			n, err := strconv.Atoi(fs[i+1])
			if err != nil {
				t.Fatalf("flags %q: %v", flags, err)
			}
			j.MinNodes, j.MaxNodes = uint32(n), uint32(n)
			i++
		default:
			t.Fatalf("flags %q: %q is not a flag of the reference sequences", flags, f)
		}
	}
	return j
}

func sameAlloc(a, b occupancy.Allocation) bool {
	m := map[topology.NodeID][]int{}
	for _, na := range b.Nodes {
		m[na.Node] = na.GPUs
	}
	if len(a.Nodes) != len(m) {
		return false
	}
	for _, na := range a.Nodes {
		if !slices.Equal(na.GPUs, m[na.Node]) {
			return false
		}
	}
	return true
}

func describe(c *topology.Cluster, a occupancy.Allocation) string {
	var parts []string
	for _, na := range a.Nodes {
		parts = append(parts, fmt.Sprintf("%s:%v", c.Nodes[na.Node].Name, na.GPUs))
	}
	return strings.Join(parts, ";")
}
