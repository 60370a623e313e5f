package queue

import (
	"container/heap"
	"sort"
)

// endEvent is a job's end at a time.
type endEvent struct {
	at  float64
	job int32
}

// endHeap is a min-heap of ends by time, then job index (deterministic).
type endHeap []endEvent

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].job < h[j].job
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(endEvent)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *endHeap) push(at float64, job int32) { heap.Push(h, endEvent{at, job}) }
func (h *endHeap) pop() endEvent              { return heap.Pop(h).(endEvent) }
func (h endHeap) next() (float64, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].at, true
}

// planned keeps the running jobs sorted by the end the scheduler expects
// (start + time limit), the order backfill releases them in when it plans
// a reservation. A sorted slice: inserts and deletes move a few thousand
// int32s at most, cheaper than any tree at this size.
type planned struct {
	ends []endEvent
}

func (p *planned) insert(at float64, job int32) {
	e := endEvent{at, job}
	i := sort.Search(len(p.ends), func(i int) bool { return !endHeap(p.ends).lessEv(p.ends[i], e) })
	p.ends = append(p.ends, endEvent{})
	copy(p.ends[i+1:], p.ends[i:])
	p.ends[i] = e
}

func (p *planned) remove(at float64, job int32) {
	e := endEvent{at, job}
	i := sort.Search(len(p.ends), func(i int) bool { return !endHeap(p.ends).lessEv(p.ends[i], e) })
	if i == len(p.ends) || p.ends[i] != e {
		panic("replay: removing a job that is not planned")
	}
	p.ends = append(p.ends[:i], p.ends[i+1:]...)
}

func (endHeap) lessEv(a, b endEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.job < b.job
}
