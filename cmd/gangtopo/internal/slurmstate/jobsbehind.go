package slurmstate

import (
	"context"
	"errors"
	"time"
)

// Job listings behind the node listing (PollConfig.JobsWait).
//
// A poll's job listing grows with the jobs Slurm holds, its node listing
// does not: with a backlog of tens of thousands of jobs in the scale lab
// (docs/benchmarks.md) one squeue --json outlasted several cycles, and the
// snapshot the plugin reads, published only once both listings were in,
// went stale between two polls (submissions then passed as submitted). With JobsWait set,
// the job listing runs beside the polls instead of inside one:
//
//  1. A poll starts a job listing when none is running and three times
//     the last one's time has passed since that one started, so Slurm
//     answers the controller's job listings at most a third of the time
//     (the daemon's pacing kept the same share while the listing held the
//     whole cycle up). Small listings therefore start every poll.
//  2. It reads the nodes, then waits for the running job listing until
//     JobsWait after its own start; the first poll waits for it whatever
//     it takes (there is no earlier one to use).
//  3. A listing back by then is the poll's (State.JobsFresh); otherwise
//     the poll goes on with the last one that came back (State.JobsAge says
//     how long before the poll it started), and the running one is kept
//     for a later poll.
//
// The node listing, which says which GPUs are busy now, is fresh in every
// poll. Jobs of an earlier listing only add busy GPUs and CPUs
// (BuildSnapshot takes the union per node), so a job that ended since
// keeps its GPUs busy in the snapshot until the next listing, never the
// other way round; a job started since is busy by its node's count. What
// acts on jobs (the controller's duties) waits for a fresh listing.

// jobsRead is one job listing, running or back.
type jobsRead struct {
	done    chan struct{} // closed when it is back
	started time.Time
	st      State // the job fields only
	run     Run
	err     error
}

// startJobs starts a job listing in the background.
func (p *Poller) startJobs(ctx context.Context) *jobsRead {
	r := &jobsRead{done: make(chan struct{}), started: time.Now()}
	go func() {
		defer close(r.done)
		r.run, r.err = p.readParse(ctx, p.cfg.JobsFrom, func(_ Source, out []byte) error { return parseJobs(p.cfg, out, &r.st) })
	}()
	return r
}

// jobsDue says whether a new job listing may start at now (step 1).
func (p *Poller) jobsDue(now time.Time) bool {
	return p.lastJobs == nil || now.Sub(p.lastJobs.started) >= 3*p.lastJobs.run.Duration
}

// pollBehind is Poll with JobsWait set (steps 1 to 3).
func (p *Poller) pollBehind(ctx context.Context) (*State, []Run, error) {
	cfg := p.cfg
	start := time.Now()
	if p.jobs == nil && p.jobsDue(start) {
		p.jobs = p.startJobs(ctx)
	}
	st := &State{}
	run, err := p.readNodes(ctx, st)
	runs := []Run{run}
	if err != nil {
		return nil, runs, pollError(cfg, st.NodesFrom, err)
	}
	if r := p.jobs; r != nil {
		wait := max(0, cfg.JobsWait-time.Since(start))
		if p.lastJobs == nil {
			wait = -1 // the first listing: nothing older to use
		}
		back, err := waitDone(ctx, r.done, wait)
		if err != nil {
			return nil, runs, err
		}
		if back {
			p.jobs = nil
			runs = append(runs, r.run)
			if r.err != nil {
				return nil, runs, pollError(cfg, cfg.JobsFrom, r.err)
			}
			p.lastJobs, st.JobsFresh = r, true
		}
	}
	if p.lastJobs == nil {
		return nil, runs, errors.New("no job listing yet") // not reached: the first poll waits for one
	}
	j := &p.lastJobs.st
	st.Jobs, st.Unreadable, st.Decisions = j.Jobs, j.Unreadable, j.Decisions
	st.Pending, st.Queued, st.Requeuing, st.PendingListed = j.Pending, j.Queued, j.Requeuing, j.PendingListed
	st.JobsAge = max(0, start.Sub(p.lastJobs.started))
	return st, runs, nil
}

// waitDone waits for done up to wait (negative: without limit; zero: not
// at all) and says whether it closed; it fails only when ctx ends first.
func waitDone(ctx context.Context, done <-chan struct{}, wait time.Duration) (bool, error) {
	select {
	case <-done:
		return true, nil
	default:
	}
	if wait == 0 {
		return false, nil
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
