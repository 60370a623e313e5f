package stockslurm

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// matchDoc, when set, is a Markdown file whose slurm-reference section
// TestReference rewrites with the match table (make bench-stockslurm).
var matchDoc = flag.String("matchdoc", "", "write the match table into this Markdown file's slurm-reference section")

// minMatch is the share of recorded placements the model must reproduce
// exactly (node set and GPU indices), in every file and overall.
const minMatch = 0.98

// refRun replays one recorded run: at every submit it asks the model
// where the job goes and compares with what slurmctld did, then applies
// what slurmctld did, so one miss does not spoil the steps after it.
type refRun struct {
	file    string
	m       *Model
	s       *occupancy.Snapshot
	jobs    map[string]occupancy.Allocation
	total   int
	matched int
	misses  []string
}

func newRefRun(file string, m *Model) *refRun {
	return &refRun{file: file, m: m, s: occupancy.New(m.c), jobs: map[string]occupancy.Allocation{}}
}

// submit compares the model's answer with want (nil: the job pended) and
// then runs the job as recorded.
func (r *refRun) submit(label, jobID, flags string, want placement) error {
	job, err := parseFlags(flags)
	if err != nil {
		return err
	}
	a, ok, err := r.m.PlaceJob(r.s, &job)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	got := r.placement(a, ok)
	r.total++
	if got.equal(want) {
		r.matched++
	} else {
		r.misses = append(r.misses, fmt.Sprintf("%s %s [%s]: slurmctld %s, model %s", r.file, label, flags, want, got))
	}
	if want == nil {
		return nil
	}
	return r.start(jobID, &job, want)
}

func (r *refRun) placement(a occupancy.Allocation, ok bool) placement {
	if !ok {
		return nil
	}
	p := placement{}
	for _, na := range a.Nodes {
		p[r.s.Cluster.Nodes[na.Node].Name] = slices.Clone(na.GPUs)
	}
	return p
}

// start allocates a recorded placement, one CPU per GPU with
// --cpus-per-gpu, else the task's CPUs.
func (r *refRun) start(jobID string, job *Job, p placement) error {
	var a occupancy.Allocation
	for name, gpus := range p {
		id, ok := r.s.Cluster.NodeByName(name)
		if !ok {
			return fmt.Errorf("job %s: unknown node %s", jobID, name)
		}
		cpus := job.CPUsPerTask
		if job.CPUsPerGPU > 0 {
			cpus = job.CPUsPerGPU * len(gpus)
		}
		a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: id, GPUs: gpus, Milli: occupancy.WholeGPU,
			CPUMilli: int32(cpus * 1000)})
	}
	if err := r.s.Allocate(a); err != nil {
		return fmt.Errorf("job %s: %w", jobID, err)
	}
	r.jobs[jobID] = a
	return nil
}

func (r *refRun) cancel(jobID string) error {
	a, ok := r.jobs[jobID]
	if !ok {
		return fmt.Errorf("cancel of job %s, which is not running", jobID)
	}
	delete(r.jobs, jobID)
	return r.s.Release(a)
}

// checkSnapshot compares the free GPUs after a step with the recorded
// snapshot: a harness check, so a mismatch is fatal rather than a miss.
func (r *refRun) checkSnapshot(snap *csvTable, step string) error {
	for k := range snap.rows {
		if snap.get(k, "step") != step {
			continue
		}
		id, ok := r.s.Cluster.NodeByName(snap.get(k, "node"))
		if !ok {
			return fmt.Errorf("%s: unknown node %s", snap.name, snap.get(k, "node"))
		}
		want, err := parseIdx(snap.get(k, "free_gpu_indices"))
		if err != nil {
			return err
		}
		var got []int
		for g, f := range r.s.NodeFree(id) {
			if f == occupancy.WholeGPU {
				got = append(got, g)
			}
		}
		if !slices.Equal(want, got) {
			return fmt.Errorf("%s step %s %s: replay has free GPUs %v, recording %v", snap.name, step, snap.get(k, "node"), got, want)
		}
	}
	return nil
}

// replaySteps drives a placements or picks file. nodeCol/idxCol name the
// columns that hold the placement; perNode says idxCol is node:idx;...
func (r *refRun) replaySteps(steps, snap *csvTable, idxCol string, perNode bool) error {
	for k := range steps.rows {
		step, jobID := steps.get(k, "step"), steps.get(k, "job_id")
		want, err := stepPlacement(steps, k, idxCol, perNode)
		if err != nil {
			return fmt.Errorf("%s step %s: %w", steps.name, step, err)
		}
		switch steps.get(k, "action") {
		case "submit":
			err = r.submit("step "+step, jobID, steps.get(k, "flags"), want)
		case "cancel":
			err = r.cancel(jobID)
		default:
			err = fmt.Errorf("unknown action %q", steps.get(k, "action"))
		}
		if err == nil {
			err = r.checkSnapshot(snap, step)
		}
		if err != nil {
			return fmt.Errorf("%s step %s: %w", steps.name, step, err)
		}
	}
	return nil
}

// stepPlacement is a step's recorded placement, nil for a pending job.
func stepPlacement(t *csvTable, k int, idxCol string, perNode bool) (placement, error) {
	if t.get(k, "state_after") == "PENDING" {
		return nil, nil
	}
	if perNode {
		return parsePerNode(t.get(k, idxCol))
	}
	g, err := parseIdx(t.get(k, idxCol))
	return placement{t.get(k, "node"): g}, err
}

// refFile is one recorded file and how to replay it.
type refFile struct {
	name string // the placements/picks file
	conf string // conf/ subdirectory
	run  func(dir string, r *refRun) error
}

func stepsFile(steps, snaps, idxCol string, perNode bool) func(string, *refRun) error {
	return func(dir string, r *refRun) error {
		st, err := readCSV(filepath.Join(dir, steps))
		if err != nil {
			return err
		}
		sn, err := readCSV(filepath.Join(dir, snaps))
		if err != nil {
			return err
		}
		return r.replaySteps(st, sn, idxCol, perNode)
	}
}

func referenceFiles() []refFile {
	var files []refFile
	for _, run := range []string{"plain_run1", "plain_run2", "pernode_run1", "plain_off2_run1", "pernode_off2_run1"} {
		p := "ref1_" + run + "_placements.csv"
		files = append(files, refFile{p, "ref1", stepsFile(p, "ref1_"+run+"_snapshots.csv", "gpu_idx_per_node", true)})
	}
	files = append(files, refFile{"ref1_probes.csv", "ref1", nil})
	for _, v := range []string{"ref2_gpus", "ref2_gres", "ref2c_gpus", "ref2c_gres"} {
		files = append(files, refFile{v + "_picks.csv", strings.SplitN(v, "_", 2)[0],
			stepsFile(v+"_picks.csv", v+"_snapshots.csv", "gpu_idx", false)})
	}
	return files
}

// runProbes replays ref1_probes.csv: each probe on a fresh cluster whose
// listed nodes hold their first K GPUs.
func runProbes(dir string, m *Model) ([]*refRun, error) {
	t, err := readCSV(filepath.Join(dir, "ref1_probes.csv"))
	if err != nil {
		return nil, err
	}
	var runs []*refRun
	for k := range t.rows {
		r := newRefRun("ref1_probes.csv", m)
		for n, part := range strings.Split(t.get(k, "prefill"), ";") {
			node, cnt, _ := strings.Cut(part, ":")
			g, err := strconv.Atoi(cnt)
			if err != nil {
				return nil, fmt.Errorf("%s: prefill %q: %w", t.name, part, err)
			}
			fill := Job{GPUsPerNode: g, MinNodes: 1, MaxNodes: 1, CPUsPerGPU: 1}
			if err := r.start(fmt.Sprintf("prefill%d", n), &fill, placement{node: seq(g)}); err != nil {
				return nil, err
			}
		}
		want, err := probePlacement(t, k)
		if err != nil {
			return nil, err
		}
		if err := r.submit(t.get(k, "probe"), "probe", t.get(k, "flags"), want); err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func probePlacement(t *csvTable, k int) (placement, error) {
	if t.get(k, "state") == "PENDING" {
		return nil, nil
	}
	p, err := parsePerNode(t.get(k, "gpu_idx_per_node"))
	if err != nil {
		return nil, err
	}
	nodes, err := expandNodes(t.get(k, "nodes"))
	if err != nil || len(nodes) != len(p) {
		return nil, fmt.Errorf("%s: probe %s: nodes %q disagree with %q", t.name, t.get(k, "probe"), t.get(k, "nodes"), t.get(k, "gpu_idx_per_node"))
	}
	return p, nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// fileResult is one recorded file's tally.
type fileResult struct {
	name           string
	total, matched int
	misses         []string
}

func (f fileResult) ok() bool { return float64(f.matched) >= minMatch*float64(f.total) }

// replayAll replays every reference file with the model mk builds for
// its cluster; the last result is the sum over all files.
func replayAll(dir string, mk func(*topology.Cluster) *Model) ([]fileResult, error) {
	var out []fileResult
	all := fileResult{name: "**all**"}
	for _, f := range referenceFiles() {
		c, err := refCluster(dir, f.conf)
		if err != nil {
			return nil, fmt.Errorf("conf/%s: %w", f.conf, err)
		}
		runs := []*refRun{newRefRun(f.name, mk(c))}
		if f.run == nil {
			runs, err = runProbes(dir, mk(c))
		} else {
			err = f.run(dir, runs[0])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		res := fileResult{name: f.name}
		for _, r := range runs {
			res.total, res.matched = res.total+r.total, res.matched+r.matched
			res.misses = append(res.misses, r.misses...)
		}
		all.total, all.matched = all.total+res.total, all.matched+res.matched
		all.misses = append(all.misses, res.misses...)
		out = append(out, res)
	}
	return append(out, all), nil
}

// ablations each take one rule out of the model. The reference data must
// notice every one of them (some file below 98%), which shows both that
// TestReference can fail and which rules the data pins down.
var ablations = []struct {
	name string
	mk   func(*topology.Cluster) *Model
}{
	{"no topology plugin (the slurm-flat model)", func(c *topology.Cluster) *Model { return NewFlat(c) }},
	{"no near-GPU byte in the node weight", ablated(ablateWeightByte)},
	{"no link pruning for --gpus (_set_job_bits1)", ablated(ablateLinkPrune)},
	{"no link rounds for --gres (_set_node_bits)", ablated(ablateNodeLinks)},
	{"sockets in index order, not by free cores", ablated(ablateSocketOrder)},
	{"Links= used without Cores=", func(c *topology.Cluster) *Model {
		return New(c, Options{Tree: true, LinksWithoutAffinity: true})
	}},
}

func ablated(a ablation) func(*topology.Cluster) *Model {
	return func(c *topology.Cluster) *Model {
		m := NewTree(c)
		m.ablate = a
		return m
	}
}

// TestReference replays every recorded Slurm 22.05.8 run and requires
// the model to reproduce at least 98% of the placements exactly in each
// file and overall, and every ablation to fall below that somewhere. With
// -v it prints the tables and every miss; -matchdoc writes them to a file.
func TestReference(t *testing.T) {
	dir := refDir()
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("Slurm reference data not found at %s (set %s): %v", dir, refDirEnv, err)
	}
	results, err := replayAll(dir, NewTree)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range results {
		row := fmt.Sprintf("%d / %d | %.1f%%", r.matched, r.total, pct(r.matched, r.total))
		if r.name == "**all**" {
			row = strings.ReplaceAll("**"+row+"**", " | ", "** | **")
		}
		rows = append(rows, fmt.Sprintf("| %s | %s |", r.name, row))
		if !r.ok() {
			t.Errorf("%s: %d of %d placements reproduced (%.1f%%), want at least %.0f%%", r.name, r.matched, r.total, pct(r.matched, r.total), 100*minMatch)
		}
	}
	all := results[len(results)-1]
	for _, m := range all.misses {
		t.Logf("miss: %s", m)
	}
	table := "| file | placements matched | rate |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	ablTable := ablationTable(t, dir)
	t.Logf("match table:\n%s\nablations:\n%s", table, ablTable)
	if *matchDoc != "" {
		if err := writeMatchDoc(*matchDoc, table, ablTable, all.misses); err != nil {
			t.Fatal(err)
		}
	}
}

// ablationTable replays the data with each ablation and fails the test
// for one the data does not notice.
func ablationTable(t *testing.T, dir string) string {
	rows := []string{"| rule taken out | placements matched | files below 98% |", "|---|---|---|"}
	for _, a := range ablations {
		results, err := replayAll(dir, a.mk)
		if err != nil {
			t.Fatal(err)
		}
		var bad []string
		for _, r := range results[:len(results)-1] {
			if !r.ok() {
				bad = append(bad, fmt.Sprintf("%s (%d / %d)", strings.TrimSuffix(r.name, ".csv"), r.matched, r.total))
			}
		}
		all := results[len(results)-1]
		rows = append(rows, fmt.Sprintf("| %s | %d / %d | %s |", a.name, all.matched, all.total, strings.Join(bad, ", ")))
		if len(bad) == 0 {
			t.Errorf("ablation %q: every file still matches at least 98%%: the data does not check that rule", a.name)
		}
	}
	return strings.Join(rows, "\n") + "\n"
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// writeMatchDoc replaces the slurm-reference section of a Markdown file
// (between <!-- BEGIN slurm-reference --> and <!-- END slurm-reference -->),
// appending it when absent.
func writeMatchDoc(path, table, ablTable string, misses []string) error {
	var b strings.Builder
	b.WriteString("## Stock Slurm model vs. a real slurmctld 22.05.8\n\n")
	b.WriteString("`selector/sim/stockslurm` (the `slurm` and `slurm-flat` baselines) replayed through every recorded run of\n")
	b.WriteString("`../shared/data/slurm-22.05-reference`: at each submit the model places the job on the recorded state and\n")
	b.WriteString("the node set and GPU indices are compared with what slurmctld did; then the recorded placement is applied.\n")
	b.WriteString("A pending job counts as matched when the model also leaves it pending. Written by `make bench-stockslurm`:\n\n")
	b.WriteString("    go test ./selector/sim/stockslurm -run TestReference -count=1 -args -matchdoc $PWD/docs/benchmarks.md\n\n")
	b.WriteString(table)
	if len(misses) == 0 {
		b.WriteString("\nMisses: none. The test fails below 98% in any file or overall.\n")
	} else {
		b.WriteString("\nMisses (the test fails below 98% in any file or overall):\n\n")
		for _, m := range misses {
			b.WriteString("- " + m + "\n")
		}
	}
	b.WriteString("\nWhat the data pins down: the same replay with one rule of the model taken out. The test also\n")
	b.WriteString("fails if an ablation keeps every file at 98% or more.\n\n")
	b.WriteString(ablTable)
	return writeSection(path, "slurm-reference", b.String())
}

// writeSection replaces section name of a Markdown file (between
// <!-- BEGIN name --> and <!-- END name -->), appending it when absent.
func writeSection(path, name, body string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(data)
	begin, end := "<!-- BEGIN "+name+" -->", "<!-- END "+name+" -->"
	block := begin + "\n" + body + end
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + block + doc[j+len(end):]
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: unbalanced %s markers", path, name)
	default:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
