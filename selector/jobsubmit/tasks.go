package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// Job arrays: every task is a job to the engine.
//
// Slurm calls job_submit once for a whole array (sbatch --array=0-49),
// with a job_desc that describes one task and array_inx naming the tasks.
// Every task then runs with the fields job_submit wrote, so one decision
// must serve all of them: an array of fifty 1-GPU tasks decided as one
// 1-GPU job would be bound to eight ranked nodes and held as one GPU,
// and the next submissions would be sent to the GPUs its other tasks take.
//
// So the decision places the tasks one after another, each as a job of its
// own on the snapshot with the tasks before it allocated (Place): the first
// task's answer is what a job gets (tier, shape, domain), every task's
// allocation is held, and the binding lists what all of them need: the
// nodes (or domains) the tasks were placed on, in the order the engine
// filled them, then the ranked alternatives (rewrite.go). Slurm starts each
// task in the first listed alternative with room, so the tasks fill the
// nodes in the engine's order.
//
// How many: the tasks Slurm may run at once, the task count or the "%"
// limit when smaller (--array=0-49%5 runs five at a time, so five are
// placed and held). The caller can stop the loop early (Place's more), so
// a large array cannot overrun the plugin's deadline: the tasks not placed
// then are left to the binding's alternatives, and the decision says how
// many were placed.

// maxArrayIndex bounds an array index, far above Slurm's MaxArraySize
// limit (at most 4,000,001), so counting the tasks never allocates much;
// maxArrayText bounds the list's text. job_submit runs before slurmctld
// checks the list against MaxArraySize, so these limits, not Slurm's,
// bound what a user's list costs inside slurmctld.
const (
	maxArrayIndex = 1 << 22
	maxArrayText  = 64 << 10
)

// ArrayTasks reads a job array's task list (sbatch --array, job_desc's
// array_inx; squeue's array_task_string for the tasks still pending):
// comma-separated indices and ranges, a range with an optional ":step",
// and an optional "%limit" at the end ("0-49%5", "1,3,5-11:2"). It
// returns the number of distinct tasks and the limit (0: none).
func ArrayTasks(inx string) (tasks, limit int, err error) {
	list, lim, hasLimit := strings.Cut(strings.TrimSpace(inx), "%")
	if hasLimit {
		if limit, err = strconv.Atoi(lim); err != nil || limit < 0 {
			return 0, 0, fmt.Errorf("array %q: task limit %q is not a count", inx, lim)
		}
	}
	if len(inx) > maxArrayText {
		return 0, 0, fmt.Errorf("array task list of %d bytes (at most %d)", len(inx), maxArrayText)
	}
	var seen []uint64           // bit i: task i (indices may repeat across items)
	budget := maxArrayIndex + 1 // indices visited in all: bounds the work whatever the list
	for _, item := range strings.Split(list, ",") {
		lo, hi, step, err := arrayRange(strings.TrimSpace(item))
		if err != nil {
			return 0, 0, fmt.Errorf("array %q: %w", inx, err)
		}
		if budget -= (hi-lo)/step + 1; budget < 0 {
			return 0, 0, fmt.Errorf("array %q: more than %d task indices", inx, maxArrayIndex+1)
		}
		for len(seen)*64 <= hi {
			seen = append(seen, 0)
		}
		for i := lo; i <= hi; i += step {
			if seen[i/64]&(1<<(i%64)) == 0 {
				seen[i/64] |= 1 << (i % 64)
				tasks++
			}
		}
	}
	return tasks, limit, nil
}

// arrayRange reads "7", "0-49" or "0-49:2".
func arrayRange(item string) (lo, hi, step int, err error) {
	rng, st, hasStep := strings.Cut(item, ":")
	step = 1
	if hasStep {
		if step, err = strconv.Atoi(st); err != nil || step < 1 {
			return 0, 0, 0, fmt.Errorf("step %q is not a positive count", st)
		}
	}
	a, b, isRange := strings.Cut(rng, "-")
	if lo, err = arrayIndex(a); err != nil {
		return 0, 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = arrayIndex(b); err != nil {
			return 0, 0, 0, err
		}
	}
	if hi < lo {
		return 0, 0, 0, fmt.Errorf("range %q ends before it starts", rng)
	}
	return lo, hi, step, nil
}

func arrayIndex(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxArrayIndex {
		return 0, fmt.Errorf("task index %q is not an index (0..%d)", s, maxArrayIndex)
	}
	return n, nil
}

// tasksAtOnce is how many of a job's tasks Slurm may run at the same
// time: 1 for a job that is not an array.
func tasksAtOnce(j Job) (int, error) {
	if strings.TrimSpace(j.ArrayInx) == "" {
		return 1, nil
	}
	n, limit, err := ArrayTasks(j.ArrayInx)
	if err != nil {
		return 0, err
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return n, nil
}

// Placement is the engine's answer about a job: the first task's result
// (all a job that is not an array has) and the allocations of every task
// placed now, the first task's first.
type Placement struct {
	place.Result
	Tasks []occupancy.Allocation
	// Spare are the engine's ranked candidates for the last task placed:
	// the alternatives once the earlier tasks' nodes are taken (the first
	// task's Candidates for a job).
	Spare []place.Candidate
}

// Place runs the engine for a prepared job on snapshot s: once for a job,
// once per task for an array, each task on s with the tasks before it
// allocated (s itself is not changed). more, when not nil, is asked before
// each task after the first and stops the loop when false (the plugin's
// deadline).
func (dc *Decider) Place(e *place.Engine, s *occupancy.Snapshot, p Prepared, more func() bool) Placement {
	req := dc.EngineRequest(p, s)
	res := e.Place(s, req)
	pl := Placement{Result: res}
	if res.Status != place.Placed {
		return pl
	}
	pl.Tasks, pl.Spare = append(pl.Tasks, res.Alloc), res.Candidates
	if p.Tasks <= 1 {
		return pl
	}
	work := s.Clone()
	for len(pl.Tasks) < p.Tasks && (more == nil || more()) {
		if work.Allocate(pl.Tasks[len(pl.Tasks)-1]) != nil {
			break // cannot happen: the engine placed it on work
		}
		next := e.Place(work, req)
		if next.Status != place.Placed {
			break // no room for more now
		}
		pl.Tasks, pl.Spare = append(pl.Tasks, next.Alloc), next.Candidates
	}
	return pl
}
