package queue

// runningSet lists the running jobs, each once, in no particular order,
// with constant-time start and stop: the view the controller's planners
// (defragmentation, quota reclaim) work from.
type runningSet struct {
	jobs []int32
	pos  map[int32]int // job -> its index in jobs
}

func newRunningSet() runningSet { return runningSet{pos: map[int32]int{}} }

func (r *runningSet) add(j int32) {
	r.pos[j] = len(r.jobs)
	r.jobs = append(r.jobs, j)
}

// remove drops j (a job not in the set is ignored): the last job takes
// its place.
func (r *runningSet) remove(j int32) {
	i, ok := r.pos[j]
	if !ok {
		return
	}
	last := r.jobs[len(r.jobs)-1]
	r.jobs[i], r.pos[last] = last, i
	r.jobs = r.jobs[:len(r.jobs)-1]
	delete(r.pos, j)
}
