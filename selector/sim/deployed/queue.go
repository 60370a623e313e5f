package deployed

import (
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Queue is the deployed path as a policy of the time-based replay
// (selector/sim/queue, which calls it through its Deciding interface):
// the plugin decides about each job when it is submitted, on the state of
// that moment; Slurm starts the rewritten job when its scheduler gets to
// it, wherever the rewrite lets it; and the controller re-decides a
// pending job whose binding has gone stale (it waits while a new decision
// would start it now), RebindInterval after it was found so at the most.
type Queue struct {
	p        *Path
	prefix   string
	interval float64
	jobs     map[string]jobsubmit.Job // the rewritten jobs, by name
}

// NewQueue makes the replay policy; interval is the controller's cycle in
// seconds (0: no re-binding, decisions made at submit stay).
func NewQueue(c *topology.Cluster, cfg Config, interval float64) (*Queue, error) {
	p, err := New(c, cfg)
	if err != nil {
		return nil, err
	}
	return &Queue{p: p, prefix: cfg.Policy.FeaturePrefix, interval: interval, jobs: map[string]jobsubmit.Job{}}, nil
}

// Name is "gangtopo-slurm".
func (q *Queue) Name() string { return "gangtopo-slurm" }

// HonorsTier is true: a required tier binds the job to its domains.
func (q *Queue) HonorsTier() bool { return true }

// RebindInterval is the controller's cycle.
func (q *Queue) RebindInterval() float64 { return q.interval }

// Place is where Slurm starts the job of r now, as decided. A job not
// submitted yet (the replay asks whether a size fits the empty cluster at
// all) is decided on s first.
func (q *Queue) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	j, ok := q.jobs[r.JobID]
	if !ok {
		var decided bool
		if j, decided = q.decide(s, r); !decided {
			return occupancy.Allocation{}, false
		}
	}
	a, ok, err := q.p.Start(s, j, nil)
	return a, ok && err == nil
}

// Submit decides about the job of r at its submission.
func (q *Queue) Submit(s *occupancy.Snapshot, r *request.Request) {
	if j, ok := q.decide(s, r); ok {
		q.jobs[r.JobID] = j
	}
}

// Stale says whether the job waits on s only because of what gangtopo
// wrote, as the controller judges it: jobsubmit.Decider.Rebind, the code
// the controller runs each cycle (its binding cannot start it now, a new
// decision on s would, and the update changes something).
func (q *Queue) Stale(s *occupancy.Snapshot, r *request.Request) bool {
	_, rb, ok := q.rebinding(s, r)
	return ok && rb.Stale
}

// Rebind carries out the controller's re-binding of the job on s, the
// cycle's working copy: the job becomes what the update makes of it in
// Slurm, and its new place is held on s so that the next job re-bound in
// the same cycle does not take it (as the controller does). False when
// the controller finds it not stale on s after all: nothing changes.
func (q *Queue) Rebind(s *occupancy.Snapshot, r *request.Request) bool {
	now, rb, ok := q.rebinding(s, r)
	if !ok || !rb.Stale {
		return false
	}
	q.jobs[r.JobID] = rb.Update.Apply(now)
	for _, a := range rb.Tasks {
		_ = s.Allocate(a) // placed by the engine on s: it fits
	}
	return true
}

// Restart carries out the controller's re-binding of the job of r,
// requeued after a node failure, which ran on the nodes ran: the job
// becomes what the update makes of it in Slurm (its old domain first when
// a healthy replacement makes room, else the tightest domain that holds
// it now). Nothing is held on s: the job may not start before its begin
// time. False when the update changes nothing.
func (q *Queue) Restart(s *occupancy.Snapshot, r *request.Request, ran []topology.NodeID) bool {
	now, had := q.jobs[r.JobID]
	if !had {
		return false
	}
	d, err := jobsubmit.ParseDecision(now.AdminComment + now.Comment)
	if err != nil {
		return false
	}
	names := make([]string, len(ran))
	for i, n := range ran {
		names[i] = s.Cluster.Nodes[n].Name
	}
	rs := q.p.Restart(s, now, d, names)
	if !rs.Stale {
		return false
	}
	q.jobs[r.JobID] = rs.Update.Apply(now)
	return true
}

// rebinding is the controller's answer about the job of r on s, and the
// job as Slurm holds it; false when gangtopo wrote no decision into it.
func (q *Queue) rebinding(s *occupancy.Snapshot, r *request.Request) (jobsubmit.Job, jobsubmit.Rebinding, bool) {
	now, had := q.jobs[r.JobID]
	if !had {
		return now, jobsubmit.Rebinding{}, false
	}
	d, err := jobsubmit.ParseDecision(now.AdminComment + now.Comment)
	if err != nil {
		return now, jobsubmit.Rebinding{}, false
	}
	return now, q.p.Rebind(s, now, d), true
}

// decide is the plugin's rewrite of the job of r on s; false when the job
// cannot be submitted or the plugin refuses it.
func (q *Queue) decide(s *occupancy.Snapshot, r *request.Request) (jobsubmit.Job, bool) {
	job, err := SbatchJob(r, q.prefix)
	if err != nil {
		return jobsubmit.Job{}, false
	}
	res, err := q.p.Submit(s, job)
	if err != nil || res.Action == jobsubmit.Reject {
		return jobsubmit.Job{}, false
	}
	return res.Apply(job), true
}
