package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// The reference procedure (../shared/data/slurm-22.05-reference/README.md,
// "Reference 1"): phase A submits seq_A until 90% of the 128 GPUs are
// allocated or a job pends; phase B cancels every third running job in
// submission order (1,4,7,... or, for the off2 runs, 3,6,9,...); phase C
// submits seq_C until a job pends. Every job is awaited: RUNNING, or
// PENDING with the same reason for 2 s.

// stepRec is one step of a run, recorded or replayed.
type stepRec struct {
	step          int
	phase, action string
	jobID         string
	gpus          int
	flags         string
	state, reason string
	alloc         map[string][]int // node -> GPU indices (submits that run; cancels: freed)
	seqNo         int              // the job's row in its phase's sequence file (submits)
	scheduler     string           // Slurm's Scheduler= of a submitted job (Main, Backfill; informational)
}

// runRec is a whole run: its steps and the free GPUs of every node after
// each step (step 0: the empty cluster).
type runRec struct {
	name  string
	steps []stepRec
	free  []map[string]map[int]bool
}

var nodes16 = func() []string {
	var out []string
	for i := 1; i <= 16; i++ {
		out = append(out, fmt.Sprintf("node%02d", i))
	}
	return out
}()

func leafOf(node string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(node, "node"))
	return (n-1)/4 + 1
}

func emptyFree() map[string]map[int]bool {
	m := map[string]map[int]bool{}
	for _, n := range nodes16 {
		m[n] = map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}
	}
	return m
}

func cloneFree(f map[string]map[int]bool) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for n, g := range f {
		out[n] = map[int]bool{}
		for i := range g {
			out[n][i] = true
		}
	}
	return out
}

// apply records a step and the free GPUs after it.
func (r *runRec) apply(s stepRec) {
	if len(r.free) == 0 {
		r.free = append(r.free, emptyFree())
	}
	f := cloneFree(r.free[len(r.free)-1])
	for n, idx := range s.alloc {
		for _, i := range idx {
			if s.action == "cancel" {
				f[n][i] = true
			} else if s.state == "RUNNING" {
				delete(f[n], i)
			}
		}
	}
	r.steps = append(r.steps, s)
	r.free = append(r.free, f)
}

// refDirs are where the reference sequences are read from, and the
// recorded stock runs a replay is compared with (22.05.8's beside the
// sequences, or a newer series' recording: record.go).
type refDirs struct{ seqs, recorded string }

// readRecorded loads ref1_<run>_run1_placements.csv of the reference data.
func readRecorded(ref, run string) (*runRec, error) {
	path := filepath.Join(ref, "ref1_"+run+"_run1_placements.csv")
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	r := &runRec{name: run}
	for i, row := range rows[1:] {
		if len(row) < 12 {
			return nil, fmt.Errorf("%s:%d: %d columns, want at least 12", path, i+2, len(row))
		}
		g, _ := strconv.Atoi(row[4])
		alloc, err := parseIdx(row[8])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: gpu_idx_per_node: %v", path, i+2, err)
		}
		seqNo, _ := strconv.Atoi(row[10])
		r.apply(stepRec{step: i + 1, phase: row[1], action: row[2], jobID: row[3], gpus: g, flags: row[5],
			state: row[6], reason: row[9], alloc: alloc, seqNo: seqNo, scheduler: row[11]})
	}
	return r, nil
}

// parseIdx reads "node01:0-3;node02:0-1".
func parseIdx(s string) (map[string][]int, error) {
	out := map[string][]int{}
	for _, part := range strings.Split(s, ";") {
		if part == "" {
			continue
		}
		n, list, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%q", part)
		}
		g, err := hostlist.Indices(list, maxIndex)
		if err != nil {
			return nil, err
		}
		out[n] = g
	}
	return out, nil
}

// maxIndex bounds the GPU indices of the reference data (8 per node).
const maxIndex = 1024

// readCSV reads a whole CSV file, header included.
func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// seqRow is one job of a sequence file.
type seqRow struct {
	seqNo int
	gpus  int
	flags []string
}

func readSeq(ref, name string) ([]seqRow, error) {
	path := filepath.Join(ref, "sequences", name)
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	var out []seqRow
	for i, row := range rows[1:] {
		g, err := strconv.Atoi(row[1])
		if err != nil || len(row) != 3 {
			return nil, fmt.Errorf("%s:%d: want seq_no,gpus,flags", path, i+2)
		}
		n, err := strconv.Atoi(row[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: seq_no %q is not a number", path, i+2, row[0])
		}
		out = append(out, seqRow{n, g, strings.Fields(row[2])})
	}
	return out, nil
}

// replay drives one reference run against the lab. With gangtopo on, the
// snapshot is published before every submission.
func (b *bench) replay(ref, run string, gangtopo bool) (*runRec, error) {
	style, offset := run, 0
	if s, ok := strings.CutSuffix(run, "_off2"); ok {
		style, offset = s, 2
	}
	seqA, err := readSeq(ref, "seq_A_"+style+".csv")
	if err != nil {
		return nil, err
	}
	seqC, err := readSeq(ref, "seq_C_"+style+".csv")
	if err != nil {
		return nil, err
	}
	if err := b.setPlugins(gangtopo); err != nil {
		return nil, err
	}
	if err := b.lab.CancelAll(context.Background()); err != nil {
		return nil, err
	}
	rr := &replayer{b: b, rec: &runRec{name: run}, gangtopo: gangtopo}
	if err := rr.phaseSubmit("A", seqA, true); err != nil {
		return nil, err
	}
	if err := rr.phaseB(offset); err != nil {
		return nil, err
	}
	if err := rr.phaseSubmit("C", seqC, false); err != nil {
		return nil, err
	}
	return rr.rec, b.lab.CancelAll(context.Background())
}

type replayer struct {
	b        *bench
	rec      *runRec
	gangtopo bool
	running  []stepRec // phase A jobs still running, in submission order
}

func (r *replayer) allocated() int {
	n := 0
	for _, f := range r.rec.lastFree() {
		n += 8 - len(f)
	}
	return n
}

func (rec *runRec) lastFree() map[string]map[int]bool {
	if len(rec.free) == 0 {
		return emptyFree()
	}
	return rec.free[len(rec.free)-1]
}

// phaseSubmit submits the sequence until a job pends (or, in phase A,
// 90% of the GPUs are taken); a pending phase-A job is withdrawn.
func (r *replayer) phaseSubmit(phase string, seq []seqRow, stopAt90 bool) error {
	for _, row := range seq {
		if stopAt90 && float64(r.allocated()) >= 0.9*128 {
			return nil
		}
		s, err := r.submit(phase, row)
		if err != nil {
			return err
		}
		r.rec.apply(s)
		fmt.Printf("  %s step %3d %s %-2d GPUs %-40s -> %s %s\n", r.rec.name, s.step, phase, s.gpus, s.flags, s.state, describe(s.alloc))
		if s.state != "RUNNING" {
			if phase == "A" {
				return r.withdraw(s)
			}
			return nil
		}
		if phase == "A" {
			r.running = append(r.running, s)
		}
	}
	return nil
}

func (r *replayer) submit(phase string, row seqRow) (stepRec, error) {
	ctx := context.Background()
	if r.gangtopo {
		if err := r.b.publish(); err != nil {
			return stepRec{}, err
		}
	}
	args := append([]string{"-o", "/dev/null"}, row.flags...)
	args = append(args, "--wrap", "sleep 100000")
	id, err := r.b.lab.Submit(ctx, nil, args...)
	if err != nil {
		return stepRec{}, err
	}
	j, err := r.b.lab.WaitSettled(ctx, id, 2*time.Second, 60*time.Second)
	if err != nil {
		return stepRec{}, err
	}
	s := stepRec{step: len(r.rec.steps) + 1, phase: phase, action: "submit", jobID: id, gpus: row.gpus,
		flags: strings.Join(row.flags, " "), state: j.State, reason: j.Reason, alloc: map[string][]int{},
		seqNo: row.seqNo, scheduler: j.Fields["Scheduler"]}
	if j.State == "RUNNING" {
		for n, g := range j.GPUs {
			s.alloc[n] = g
		}
	}
	return s, nil
}

// withdraw cancels a phase-A job that pends (the end of phase A) and
// records it as the reference procedure does: a phase-A cancel step.
func (r *replayer) withdraw(s stepRec) error {
	if _, err := r.b.lab.Run(context.Background(), 0, "scancel", s.jobID); err != nil {
		return err
	}
	r.rec.apply(stepRec{step: len(r.rec.steps) + 1, phase: "A", action: "cancel", jobID: s.jobID, gpus: s.gpus,
		state: "CANCELLED", reason: "withdrawn: pending job at end of phase A"})
	return nil
}

// phaseB cancels every third phase-A job still running, one at a time.
func (r *replayer) phaseB(offset int) error {
	ctx := context.Background()
	for i, s := range r.running {
		if i%3 != offset {
			continue
		}
		if _, err := r.b.lab.Run(ctx, 0, "scancel", s.jobID); err != nil {
			return err
		}
		if err := r.waitGone(s.jobID); err != nil {
			return err
		}
		r.rec.apply(stepRec{step: len(r.rec.steps) + 1, phase: "B", action: "cancel", jobID: s.jobID, gpus: s.gpus,
			state: "CANCELLED", alloc: s.alloc, reason: fmt.Sprintf("phase B: every 3rd running job in submission order (offset %d)", offset)})
	}
	return nil
}

func (r *replayer) waitGone(id string) error {
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		q, err := r.b.lab.Run(ctx, 0, "squeue", "-h", "-j", id, "-o", "%T")
		if err != nil {
			return err
		}
		c, err := r.b.lab.Run(ctx, 0, "sinfo", "-h", "-t", "completing", "-o", "%N")
		if err != nil {
			return err
		}
		if strings.TrimSpace(q) == "" && strings.TrimSpace(c) == "" {
			return nil
		}
	}
	return fmt.Errorf("job %s still there after 60 s", id)
}

func describe(alloc map[string][]int) string {
	var names []string
	for n := range alloc {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return hostlist.Compress(names)
}
