package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// `slurmbench record` runs the Reference 1 procedure (replay.go) on stock
// Slurm, with nothing of gangtopo in the lab (no job_submit plugin, an
// empty plugstack.conf, the distribution's PluginDir only), each run on a
// fresh cluster so job IDs start at 1 as in the reference, and writes what
// slurmctld did in the reference data's own files and columns:
// <out>/slurm-<release>/ref1_<run>_run1_placements.csv and _snapshots.csv,
// the configuration the lab wrote (conf/) and a README saying how, when and
// on which release they were recorded. selector/sim/stockslurm's
// TestReferenceSeries checks the `slurm` model against every such
// directory.

// placementsHeader and snapshotsHeader are the reference data's columns
// (../shared/data/slurm-22.05-reference/README.md, "Files").
var (
	placementsHeader = []string{"step", "phase", "action", "job_id", "gpus_requested", "flags", "state_after", "nodes",
		"gpu_idx_per_node", "reason", "seq_no", "scheduler", "gpus_alloc_after"}
	snapshotsHeader = []string{"step", "node", "free_gpu_indices"}
)

// recording is what record keeps of one run: its steps and the lab's
// configuration files.
type recording struct {
	rec  *runRec
	conf map[string][]byte
}

func record(root, ref string, runs []string, out string) error {
	if len(runs) == 0 {
		return fmt.Errorf("record: no runs given (-runs plain,pernode)")
	}
	t0 := time.Now()
	var rel slurmlab.Release
	var recs []recording
	for _, run := range runs {
		err := withLab(root, false, func(b *bench) error {
			rel = b.lab.Release
			fmt.Printf("== %s, stock Slurm %s\n", run, rel)
			r, err := b.replay(ref, run, false)
			if err != nil {
				return err
			}
			conf, err := labConf(b.lab)
			recs = append(recs, recording{r, conf})
			return err
		})
		if err != nil {
			return fmt.Errorf("record %s: %w", run, err)
		}
	}
	dir := filepath.Join(out, "slurm-"+rel.String())
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		return err
	}
	for _, r := range recs {
		if err := writeRecording(dir, r.rec); err != nil {
			return err
		}
	}
	for name, data := range recs[0].conf {
		if err := os.WriteFile(filepath.Join(dir, "conf", name), data, 0o644); err != nil {
			return err
		}
	}
	readme, err := recordReadme(root, ref, rel, recs, time.Since(t0))
	if err != nil {
		return err
	}
	fmt.Print(readme)
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644)
}

// labConf reads the configuration files the lab wrote, its directory
// written as @LAB@ (as in the reference's conf/).
func labConf(l *slurmlab.Lab) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range []string{"slurm.conf", "gres.conf", "topology.conf", "cgroup.conf"} {
		data, err := os.ReadFile(l.Path("etc", name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[name] = []byte(strings.ReplaceAll(string(data), l.Dir, "@LAB@"))
	}
	return out, nil
}

// writeRecording writes one run's placements and snapshots files.
func writeRecording(dir string, r *runRec) error {
	base := filepath.Join(dir, "ref1_"+r.name+"_run1_")
	if err := writeCSVFile(base+"placements.csv", placementsHeader, placementRows(r)); err != nil {
		return err
	}
	return writeCSVFile(base+"snapshots.csv", snapshotsHeader, snapshotRows(r))
}

// placementRows are a run's steps in the reference's columns: a running
// job has no reason, a cancel no sequence number or scheduler.
func placementRows(r *runRec) [][]string {
	var rows [][]string
	for i, st := range r.steps {
		reason, seqNo, sched := st.reason, "", ""
		if st.action == "submit" {
			seqNo, sched = strconv.Itoa(st.seqNo), st.scheduler
			if st.state == "RUNNING" {
				reason = ""
			}
		}
		rows = append(rows, []string{strconv.Itoa(st.step), st.phase, st.action, st.jobID, strconv.Itoa(st.gpus), st.flags,
			st.state, describe(st.alloc), idxList(st.alloc), reason, seqNo, sched, strconv.Itoa(128 - freeGPUs(r.free[i+1]))})
	}
	return rows
}

// snapshotRows are the free GPU indices of every node after every step,
// step 0 the empty cluster.
func snapshotRows(r *runRec) [][]string {
	var rows [][]string
	for step, free := range r.free {
		for _, n := range nodes16 {
			var idx []int
			for g := range free[n] {
				idx = append(idx, g)
			}
			sort.Ints(idx)
			rows = append(rows, []string{strconv.Itoa(step), n, place.IndexList(idx)})
		}
	}
	return rows
}

func writeCSVFile(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// recordReadme says what was recorded, how and when, and how each run
// compares with 22.05.8's recording of the same sequence.
func recordReadme(root, ref string, rel slurmlab.Release, recs []recording, wall time.Duration) (string, error) {
	where, series := "the host's own Slurm packages", slurmlab.HostSeries
	if root != "" {
		where, series = "a Debian root ("+filepath.Base(root)+", make roots), its daemons chrooted by tests/slurmlab", filepath.Base(root)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Stock Slurm %s: Reference 1 recorded in the lab\n\n", rel)
	fmt.Fprintf(&b, "What a real stock slurmctld %s (%s) did with the Reference 1 sequences of "+
		"`../shared/data/slurm-22.05-reference/` (fill to 90%%, cancel every third job, refill until a job pends; the README "+
		"there), driven by `tests/slurmbench` (replay.go) through the 16-node lab of tests/slurmlab "+
		"(docs/examples/lab16.yaml: 4 leaves of 4 nodes x 8 GPUs, 2 spines; `TopologyPlugin=topology/tree`, "+
		"`select/cons_tres` with `CR_Core`, `sched/backfill`), with nothing of gangtopo: no `JobSubmitPlugins`, an empty "+
		"plugstack.conf, the distribution's PluginDir only. Each run started on a fresh cluster (job IDs from 1). "+
		"Files and columns as in the reference directory; `conf/` holds the configuration the lab wrote (`@LAB@` is the "+
		"lab directory; ports are picked free per run).\n\n", rel, where)
	fmt.Fprintf(&b, "Recorded %s by `slurmbench record -runs %s` (what `make record-reference SLURM_SERIES=%s` runs), %v in all, "+
		"on a shared 2-core machine.\n\n", time.Now().UTC().Format("2006-01-02"), runNames(recs), series, wall.Round(time.Second))
	b.WriteString("| run | steps | submits | placed as in 22.05.8's recording (nodes and GPU indices, step by step) |\n|---|---|---|---|\n")
	for _, r := range recs {
		old, err := readRecorded(ref, r.rec.name)
		if err != nil {
			return "", err
		}
		same, total := samePlacements(old, r.rec)
		submits := 0
		for _, st := range r.rec.steps {
			if st.action == "submit" {
				submits++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d of %d |\n", r.rec.name, len(r.rec.steps), submits, same, total)
	}
	b.WriteString("\nThe `slurm` model (selector/sim/stockslurm) is checked against these files by TestReferenceSeries " +
		"(at least 98% of the placements reproduced, as on 22.05.8's).\n")
	return b.String(), nil
}

func runNames(recs []recording) string {
	var names []string
	for _, r := range recs {
		names = append(names, r.rec.name)
	}
	return strings.Join(names, ",")
}
