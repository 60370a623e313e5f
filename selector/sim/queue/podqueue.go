package queue

import (
	"container/heap"
	"math"
	"slices"
)

// Kubernetes scheduler queue defaults (kube-scheduler v1.2x):
// podInitialBackoffSeconds and podMaxBackoffSeconds.
const (
	podInitialBackoff = 1.0
	podMaxBackoff     = 10.0
	// saturated is the attempts count from which the back-off is the
	// maximum (1, 2, 4, 8, then 10 s).
	saturated = 5
)

// podBackoff is the back-off of a pod after its n-th failed attempt:
// 1 s doubling per attempt, at most 10 s.
func podBackoff(attempts int) float64 {
	b := podInitialBackoff
	for i := 1; i < attempts && b < podMaxBackoff; i++ {
		b *= 2
	}
	return min(b, podMaxBackoff)
}

// The pod queue, in cohorts.
//
// kube-scheduler keeps pending pods in three places: the active queue
// (tried in order of queue time, the time of their last failure or of
// their creation), the unschedulable pool (failed, waiting for a cluster
// event) and the back-off queue (moved by an event, waiting for their
// back-off to end). Simulating every pod would touch every pending pod at
// every GPU release: too slow when thousands wait.
//
// But pods that fail at the same instant with the same attempts count
// stay together from then on: they are moved by the same events, their
// back-offs end together, and they are tried in a row. So the queue holds
// cohorts: runs of pod groups (one per job incarnation) with a common
// queue time and attempts class (attempts are capped at saturated, where
// the back-off stops growing), ordered by (queue time, sequence). A
// release moves whole cohorts; a failure relabels a cohort in O(1);
// cohorts that fail one after the other with the same class are joined.
// Order inside a cohort is the order the pods would have in the real
// queue.

// cohort is a run of pod groups in queue order (a singly linked list).
type cohort struct {
	at       float64 // queue time
	seq      int64   // order among cohorts of the same queue time
	attempts int     // 0..saturated
	retry    float64 // end of back-off, while in the back-off queue
	head     int32   // first group, -1 when empty
	tail     int32
	minPod   int // smallest pod (GPUs) of its groups: none binds below that
}

// podQueue holds the cohorts and the links between pod groups.
type podQueue struct {
	next    []int32 // by group: next in its cohort
	job     []int32 // by group: the job
	active  []*cohort
	unsched []*cohort
	backoff []*cohort
	seq     int64
}

// newGroup allocates a pod group for job j.
func (q *podQueue) newGroup(j int32) int32 {
	q.next = append(q.next, -1)
	q.job = append(q.job, j)
	return int32(len(q.job) - 1)
}

func (q *podQueue) newCohort(at float64, attempts int) *cohort {
	q.seq++
	return &cohort{at: at, seq: q.seq, attempts: min(attempts, saturated), head: -1, tail: -1, minPod: math.MaxInt}
}

// push appends group g, whose pods have podGPUs GPUs each.
func (q *podQueue) push(c *cohort, g int32, podGPUs int) {
	c.minPod = min(c.minPod, podGPUs)
	q.next[g] = -1
	if c.head < 0 {
		c.head = g
	} else {
		q.next[c.tail] = g
	}
	c.tail = g
}

func (q *podQueue) pop(c *cohort) int32 {
	g := c.head
	c.head = q.next[g]
	if c.head < 0 {
		c.tail = -1
	}
	return g
}

// fail puts a cohort that failed at t into the unschedulable pool, joined
// to the previous failure if that has the same class.
func (q *podQueue) fail(c *cohort, t float64) {
	q.seq++
	c.at, c.seq, c.attempts = t, q.seq, min(c.attempts+1, saturated)
	if n := len(q.unsched); n > 0 {
		if last := q.unsched[n-1]; last.at == t && last.attempts == c.attempts {
			q.next[last.tail] = c.head
			last.tail = c.tail
			last.minPod = min(last.minPod, c.minPod)
			return
		}
	}
	q.unsched = append(q.unsched, c)
}

// release moves the unschedulable cohorts on a GPU release at t: to the
// active queue if their back-off is over, else to the back-off queue.
func (q *podQueue) release(t float64) {
	for _, c := range q.unsched {
		c.retry = c.at + podBackoff(c.attempts)
		if c.retry <= t {
			q.active = append(q.active, c)
		} else {
			q.backoff = append(q.backoff, c)
		}
	}
	q.unsched = q.unsched[:0]
}

// flush moves the cohorts whose back-off ended by t to the active queue.
func (q *podQueue) flush(t float64) {
	kept := q.backoff[:0]
	for _, c := range q.backoff {
		if c.retry <= t {
			q.active = append(q.active, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(q.backoff[len(kept):])
	q.backoff = kept
}

// nextRetry is the earliest end of back-off.
func (q *podQueue) nextRetry() (float64, bool) {
	if len(q.backoff) == 0 {
		return 0, false
	}
	t := q.backoff[0].retry
	for _, c := range q.backoff[1:] {
		t = min(t, c.retry)
	}
	return t, true
}

// sortActive orders the active cohorts by queue time, then sequence.
func (q *podQueue) sortActive() {
	slices.SortFunc(q.active, func(a, b *cohort) int {
		switch {
		case a.at != b.at:
			if a.at < b.at {
				return -1
			}
			return 1
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
}

// keyed is a timed entry for a job, valid while gen matches the job's.
type keyed struct {
	at  float64
	job int32
	gen int32
}

// keyHeap is a min-heap of entries by time, then job.
type keyHeap []keyed

func (h keyHeap) Len() int { return len(h) }
func (h keyHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].job < h[j].job
}
func (h keyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)   { *h = append(*h, x.(keyed)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *keyHeap) push(e keyed) { heap.Push(h, e) }
func (h *keyHeap) pop() keyed   { return heap.Pop(h).(keyed) }

// due reports whether the earliest entry is at or before t.
func (h keyHeap) due(t float64) bool { return len(h) > 0 && h[0].at <= t }

func (h keyHeap) next() (float64, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].at, true
}
