package controller

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Gangs requeued after a node failure (part of the re-binding).
//
// When a node under a running batch job fails, Slurm requeues the job:
// it pends again with its restart count raised, its node list cleared, and
// a begin time about two minutes on (reason BeginTime), with the binding
// made at submit. Left alone, it starts in the first domain of that
// binding that has room when it may start: the submit-time ranking, with
// the domain it ran in, now short of a node, where it was.
//
// So the controller remembers, every poll, the nodes each running job
// with a gangtopo decision runs on (Slurm forgets them at the requeue),
// and each round looks for pending jobs that:
//
//   - carry a gangtopo decision and no pin of gangtopo's (only jobs the
//     plugin decided about are ever changed, as for re-binding);
//   - ran before with a lower restart count, on nodes of which one at
//     least is down, drained or failing now (a requeue after a node
//     failure, not a preemption's or an administrator's);
//   - may start once their begin time passes (not held).
//
// For each, once per restart, jobsubmit's Restart makes the new decision
// (its old domain first when a healthy replacement makes it large enough
// again, else the tightest domain that can hold it now) and the update
// goes through the door like every re-binding, within rebind's
// max_per_cycle, the door's back-off and limits. This runs during the
// BeginTime wait, which plain re-binding skips: the gang is bound where it
// should go before Slurm may start it. Afterwards it is an ordinary bound
// pending job, re-bound like any other if its binding goes stale.
//
// What is remembered survives a restart through the snapshot the
// controller publishes: it lists every running job and its nodes, so a
// controller that starts (or takes over, reading the same file) after a
// requeue reads where each job ran from the last snapshot before it
// (remember). A job listed running there and pending now with a restart
// count above 0 was requeued since; its count then is not in the file, so
// any count above 0 counts. What it had handled is not in the file: a
// gang it re-bound already is looked at again, and left as it is when its
// binding is what Restart would make now. rebind.after_failure: false
// turns this off.

// ranOn is where a running job was last seen.
type ranOn struct {
	nodes    []string
	restarts int
	seen     time.Time
}

// failureWatch is the memory of running jobs and of restarts handled.
type failureWatch struct {
	ran map[string]ranOn
	// done holds, by job ID, the restart count already handled.
	done map[string]int
	// under are the running jobs seen on a failed node at the last poll,
	// to log each once.
	under map[string]bool
	// decided holds, by job ID, the restart count whose binding is
	// settled (kept, or re-bound by an update Slurm took), and atOnce the
	// count made eligible at once (atonce.go)
	decided, atOnce map[string]int
	m               *failureMetrics
}

// forgetAfter bounds how long a job not seen running is remembered: a
// requeued gang handled or not by then is plain re-binding's.
const forgetAfter = time.Hour

func newFailureWatch(reg prometheus.Registerer) *failureWatch {
	return &failureWatch{ran: map[string]ranOn{}, done: map[string]int{}, under: map[string]bool{}, decided: map[string]int{},
		atOnce: map[string]int{}, m: newFailureMetrics(reg)}
}

// observe remembers the nodes of the running jobs gangtopo decided about
// and counts those running on a node that failed (s says which are not
// healthy); it returns the IDs of the jobs newly seen on a failed node.
func (w *failureWatch) observe(st *slurmstate.State, s *occupancy.Snapshot, now time.Time) []string {
	var newly []string
	under := map[string]bool{}
	for _, j := range st.Jobs {
		if j.NodeList == "" || !decided(j.Facts.AdminComment) || !runs[strings.ToUpper(j.State)] {
			continue // a completing job may be one being requeued, its count raised already
		}
		nodes, err := hostlist.ExpandAtMost(j.NodeList, hostlist.MaxHosts)
		if err != nil {
			continue
		}
		w.ran[j.ID] = ranOn{nodes: nodes, restarts: j.Facts.Restarts, seen: now}
		if len(failed(s, nodes)) > 0 {
			under[j.ID] = true
			if !w.under[j.ID] {
				newly = append(newly, j.ID)
			}
		}
	}
	w.under = under
	w.m.under.Set(float64(len(under)))
	for id, r := range w.ran {
		if now.Sub(r.seen) > forgetAfter {
			delete(w.ran, id)
			delete(w.done, id)
			delete(w.decided, id)
			delete(w.atOnce, id)
		}
	}
	return newly
}

// remember seeds the memory from a snapshot published earlier (by this
// controller before a restart, or by the one it takes over from): where
// each job it lists ran, at the snapshot's time. Restarts is unknown
// there (-1: any count above 0 is a requeue since). It returns how many
// jobs it learnt.
func (w *failureWatch) remember(s *occupancy.Snapshot) int {
	n := 0
	for _, j := range s.Jobs {
		if _, known := w.ran[j.ID]; known || len(j.Alloc.Nodes) == 0 {
			continue
		}
		nodes := make([]string, len(j.Alloc.Nodes))
		for i, na := range j.Alloc.Nodes {
			nodes[i] = s.Cluster.Nodes[na.Node].Name
		}
		w.ran[j.ID] = ranOn{nodes: nodes, restarts: unknownRestarts, seen: s.Time}
		n++
	}
	return n
}

// rememberRuns reads the snapshot at path, published before this
// controller started, into the failure memory (remember); a snapshot that
// is missing or does not read with the cluster file as it is now (a node
// renamed) is logged and left: plain re-binding has those gangs.
func (c *Controller) rememberRuns(path string) {
	r := c.rebind
	if r == nil || !r.cfg.Rebind.AfterFailure {
		return
	}
	s, err := readSnapshot(path, c.topo.Cluster)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		c.log.Warn().Err(err).Msg("the last snapshot does not say where running jobs ran; gangs requeued before this start are left to plain re-binding")
	default:
		n := r.failures.remember(s)
		c.log.Info().Int("jobs", n).Time("snapshot_time", s.Time).Msg("where running jobs ran, read from the last snapshot (for gangs requeued after a node failure)")
	}
}

// readSnapshot decodes the snapshot file at path on cluster c.
func readSnapshot(path string, c *topology.Cluster) (*occupancy.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return occupancy.Decode(f, path, c)
}

// unknownRestarts is the restart count of a job learnt from a snapshot.
const unknownRestarts = -1

// runs are the job states whose node list and restart count are
// remembered.
var runs = map[string]bool{"RUNNING": true, "SUSPENDED": true}

// requeued says whether pending job pj is a gang requeued after a node
// failure that is not handled yet, and the nodes it ran on; why says why
// not, for a job requeued at least once.
func (w *failureWatch) requeued(pj slurmstate.PendingJob, s *occupancy.Snapshot) (ran []string, ok bool, why string) {
	r, seen := w.ran[pj.ID]
	switch {
	case pj.Facts.Restarts == 0:
		return nil, false, ""
	case !seen:
		return nil, false, "not seen running by this controller, nor in the snapshot it started from"
	case pj.Facts.Restarts <= r.restarts:
		return nil, false, "its restart count is the one it ran with"
	case w.done[pj.ID] >= pj.Facts.Restarts:
		return nil, false, "" // handled
	}
	if _, pinned := actuate.ParseMark(pj.Facts.AdminComment); pinned {
		return nil, false, "pinned"
	}
	if pj.Reason != "BeginTime" && notYet[pj.Reason] {
		return nil, false, "held: " + pj.Reason // a requeue hold: it waits for a person, not for nodes
	}
	if len(failed(s, r.nodes)) == 0 {
		return nil, false, "every node it ran on is healthy (requeued by a preemption or an administrator)"
	}
	return r.nodes, true, ""
}

// failed lists the named nodes that s knows and says are not healthy
// (down, drained, failing or not reported).
func failed(s *occupancy.Snapshot, nodes []string) []string {
	var out []string
	for _, name := range nodes {
		if id, ok := s.Cluster.NodeByName(name); ok && !s.State[id].Usable() {
			out = append(out, name)
		}
	}
	return out
}

// decided says whether an AdminComment carries a gangtopo decision.
func decided(adminComment string) bool {
	_, err := jobsubmit.ParseDecision(adminComment)
	return err == nil
}

// restarts re-binds the gangs requeued after a node failure among
// requeuing (Slurm still finishing their requeue: State.Requeuing) and
// pending (rebind.go's cycle calls it first, with its working snapshot).
// It returns the jobs it looked at, which the plain re-binding leaves
// alone this cycle, and the updates it made.
//
// A gang still being requeued holds its old nodes in s and work; Slurm
// gives them back when the requeue ends, to it first under an expedited
// requeue (it is at the top of the queue). So its restart is decided on
// work without it: the nodes it ran on count as free, as they will be
// when it may start. It is caught there when slurm.conf's EpilogSlurmctld
// runs `gangtopo wake` (wake.go), which holds the requeue until a cycle has
// seen it: the restart is then decided before Slurm may start the gang.
func (r *rebinder) restarts(ctx context.Context, s, work *occupancy.Snapshot, pending, requeuing []slurmstate.PendingJob) (seen map[string]bool, updated int, stop bool) {
	seen = map[string]bool{}
	if !r.cfg.Rebind.AfterFailure {
		return seen, 0, false
	}
	w := r.failures
	now := r.door.Now()
	for _, pj := range slices.Concat(requeuing, pending) {
		ran, ok, why := w.requeued(pj, s)
		if !ok {
			if why != "" {
				r.log.Debug().Str("job", pj.ID).Int("restarts", pj.Facts.Restarts).Str("reason", pj.Reason).Str("why", why).
					Msg("a requeued job is not re-bound as requeued after a node failure")
			}
			continue
		}
		seen[pj.ID] = true
		d, err := jobsubmit.ParseDecision(pj.Decision)
		if err != nil {
			continue
		}
		// a requeuing gang's old allocation, off work while it is decided
		// (none for a pending one)
		own := takeOff(work, []string{pj.ID})
		rs := r.dec.Restart(pj.Job, d, ran, work, r.eng, s.Generation)
		log := r.log.Info().Str("job", pj.ID).Int("restarts", pj.Facts.Restarts).Strs("ran_on", ran).Strs("failed", failed(s, ran)).
			Str("old_domain", rs.Old).Bool("in_old_domain", rs.InOld).Str("why", rs.Why)
		if !rs.Stale {
			putBack(work, own)
			w.done[pj.ID], w.decided[pj.ID] = pj.Facts.Restarts, pj.Facts.Restarts
			w.m.restarts.WithLabelValues("unchanged").Inc()
			log.Msg("a gang requeued after a node failure keeps its binding")
			continue
		}
		if updated >= r.cfg.Rebind.MaxPerCycle {
			r.m.skipped.WithLabelValues("max_per_cycle").Inc()
			putBack(work, own)
			continue
		}
		updated++
		// Slurm preempts the lent jobs to start the gang: in work their
		// GPUs are the gang's once the update is made (apply), theirs again
		// when it is not
		lent := takeOff(work, rs.Reclaims)
		if len(rs.Reclaims) > 0 {
			log = log.Strs("reclaims", rs.Reclaims)
		}
		err = r.apply(ctx, pj, rs.Rebinding, work, now)
		if err != nil {
			putBack(work, lent)
			putBack(work, own)
		}
		switch {
		case err == nil:
			w.done[pj.ID], w.decided[pj.ID] = pj.Facts.Restarts, pj.Facts.Restarts
			w.m.restarts.WithLabelValues(map[bool]string{true: "old_domain", false: "elsewhere"}[rs.InOld]).Inc()
			log.Str("update", rs.Update.String()).Msg("re-bound a gang requeued after a node failure")
		case actuate.Refused(err):
			w.m.restarts.WithLabelValues("refused").Inc()
		default:
			w.done[pj.ID] = pj.Facts.Restarts // gone, or failed: the door's back-off and plain re-binding have it
			w.m.restarts.WithLabelValues("failed").Inc()
		}
		if endsUpdates(err) {
			return seen, updated, true
		}
	}
	return seen, updated, false
}

// putBack adds jobs taken off s (takeOff) again.
func putBack(s *occupancy.Snapshot, jobs []occupancy.Job) {
	for _, j := range jobs {
		_ = s.AddJob(j)
	}
}

// takeOff removes the named running jobs from s and returns them.
func takeOff(s *occupancy.Snapshot, ids []string) []occupancy.Job {
	var out []occupancy.Job
	for _, j := range s.Jobs {
		if slices.Contains(ids, j.ID) && s.RemoveJob(j.ID) == nil {
			out = append(out, j)
		}
	}
	return out
}

// failureMetrics are the series of the failure handling.
type failureMetrics struct {
	restarts *prometheus.CounterVec
	atOnce   *prometheus.CounterVec
	under    prometheus.Gauge
}

func newFailureMetrics(reg prometheus.Registerer) *failureMetrics {
	m := &failureMetrics{
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_failure_restarts_total",
			Help: "Gangs requeued after a node failure, by what the controller did: old_domain (re-bound with the domain they ran in first, a healthy replacement inside it), elsewhere (re-bound to the tightest domain that holds them now), unchanged (their binding was already that), refused (the door did not make it; tried again) or failed."}, []string{"result"}),
		under: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_running_gangs_on_failed_nodes",
			Help: "Running jobs gangtopo decided about with a node down, drained or failing under them at the last poll."}),
	}
	reg.MustRegister(m.restarts, m.under)
	m.atOnce = newAtOnceCounter(reg)
	for _, r := range []string{"old_domain", "elsewhere", "unchanged", "refused", "failed"} {
		m.restarts.WithLabelValues(r)
	}
	return m
}
