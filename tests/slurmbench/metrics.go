package main

import (
	"fmt"
	"github.com/gangtopo/gangtopo/selector/place"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// summary is what the report compares between runs.
type summary struct {
	jobsA, gpusA, wholeA      int // running after phase A, GPUs allocated, whole free nodes
	freeB, wholeB             int // after phase B
	placedC                   int // phase-C jobs placed before the first pend
	pendStep, pendGPUs        int // the first job that pends (0: none)
	pendReason                string
	pendFree, pendWhole       int // free GPUs and whole free nodes when it pended
	gangs, spanning, needless int // 16+ GPU jobs, those over >1 leaf, those over >1 leaf while one leaf had the whole nodes
	broke, brokeLeaf          int // small jobs that broke a whole node while a hole that fit existed (anywhere / in its leaf)
	noWholeStep               int // first phase-C step with no whole free node (0: never)
}

func wholeNodes(f map[string]map[int]bool) int {
	n := 0
	for _, g := range f {
		if len(g) == 8 {
			n++
		}
	}
	return n
}

func freeGPUs(f map[string]map[int]bool) int {
	n := 0
	for _, g := range f {
		n += len(g)
	}
	return n
}

func summarize(r *runRec) summary {
	var s summary
	for i, st := range r.steps {
		before, after := r.free[i], r.free[i+1]
		switch {
		case st.phase == "A" && st.state == "RUNNING":
			s.jobsA++
			s.gpusA, s.wholeA = 128-freeGPUs(after), wholeNodes(after)
		case st.phase == "B":
			s.freeB, s.wholeB = freeGPUs(after), wholeNodes(after)
		case st.phase == "C" && st.state == "RUNNING" && s.pendStep == 0:
			s.placedC++
			if s.noWholeStep == 0 && wholeNodes(after) == 0 {
				s.noWholeStep = st.step
			}
		}
		if st.action == "submit" && st.state != "RUNNING" && s.pendStep == 0 && st.phase == "C" {
			s.pendStep, s.pendGPUs, s.pendReason = st.step, st.gpus, st.reason
			s.pendFree, s.pendWhole = freeGPUs(before), wholeNodes(before)
		}
		if st.action == "submit" && st.state == "RUNNING" {
			s.gangStats(st, before)
			s.smallStats(st, before)
		}
	}
	return s
}

// gangStats counts 16+ GPU jobs over several leaves, and those that did so
// while one leaf had enough whole free nodes for them.
func (s *summary) gangStats(st stepRec, before map[string]map[int]bool) {
	if st.gpus < 16 {
		return
	}
	s.gangs++
	leaves := map[int]bool{}
	for n := range st.alloc {
		leaves[leafOf(n)] = true
	}
	if len(leaves) < 2 {
		return
	}
	s.spanning++
	whole := map[int]int{}
	for n, g := range before {
		if len(g) == 8 {
			whole[leafOf(n)]++
		}
	}
	for _, w := range whole {
		if w*8 >= st.gpus {
			s.needless++
			return
		}
	}
}

// smallStats counts one-node jobs that took a whole free node while a
// partly used node could have held them (in the same leaf, or anywhere).
func (s *summary) smallStats(st stepRec, before map[string]map[int]bool) {
	if st.gpus > 8 || len(st.alloc) != 1 {
		return
	}
	var node string
	for n := range st.alloc {
		node = n
	}
	if len(before[node]) != 8 {
		return
	}
	any, leaf := false, false
	for n, g := range before {
		if len(g) >= st.gpus && len(g) < 8 {
			any = true
			leaf = leaf || leafOf(n) == leafOf(node)
		}
	}
	if any {
		s.broke++
	}
	if leaf {
		s.brokeLeaf++
	}
}

// samePlacements counts the submits of b placed exactly as in a (same
// nodes and GPU indices), over the steps both have.
func samePlacements(a, b *runRec) (same, total int) {
	for i := 0; i < len(a.steps) && i < len(b.steps); i++ {
		x, y := a.steps[i], b.steps[i]
		if x.action != "submit" {
			continue
		}
		total++
		if x.state == y.state && fmt.Sprint(sortedAlloc(x.alloc)) == fmt.Sprint(sortedAlloc(y.alloc)) {
			same++
		}
	}
	return same, total
}

func sortedAlloc(a map[string][]int) []string {
	var out []string
	for n, g := range a {
		out = append(out, fmt.Sprintf("%s:%v", n, g))
	}
	sort.Strings(out)
	return out
}

// writeSteps writes a run's step-by-step record as CSV: the step, the job
// and where it went, whole free nodes and free GPUs after the step.
func writeSteps(dir string, r *runRec, label string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("step,phase,action,job_id,gpus,flags,state,reason,nodes,leaves,whole_free_nodes_after,free_gpus_after,gpu_idx_per_node\n")
	for i, st := range r.steps {
		leaves := map[int]bool{}
		for n := range st.alloc {
			leaves[leafOf(n)] = true
		}
		var ls []string
		for l := range leaves {
			ls = append(ls, fmt.Sprintf("leaf%d", l))
		}
		sort.Strings(ls)
		fmt.Fprintf(&b, "%d,%s,%s,%s,%d,%s,%s,%s,%s,%s,%d,%d,%s\n", st.step, st.phase, st.action, st.jobID, st.gpus,
			st.flags, st.state, st.reason, describe(st.alloc), strings.Join(ls, " "), wholeNodes(r.free[i+1]), freeGPUs(r.free[i+1]),
			idxList(st.alloc))
	}
	path := filepath.Join(dir, "replay-"+r.name+"-"+label+".csv")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// idxList writes an allocation as the reference data does:
// "node01:0-3;node02:0-1", nodes in order.
func idxList(alloc map[string][]int) string {
	var names []string
	for n := range alloc {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+":"+place.IndexList(alloc[n]))
	}
	return strings.Join(parts, ";")
}
