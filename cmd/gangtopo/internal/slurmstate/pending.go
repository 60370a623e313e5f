package slurmstate

import (
	"fmt"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Pending jobs that carry a gangtopo decision: what the controller needs to
// re-bind them (controller/rebind.go) and to publish their bindings with
// the snapshot, so the plugin's job_modify can keep them (jobsubmit
// KeepBinding).
//
// Only squeue --json gives them: scontrol's text prints users' job names
// and comments unescaped, so its records cannot be trusted to say which
// job a field belongs to, and the controller changes jobs from what it
// reads here. The decision is read from the AdminComment only, which users
// cannot write. The job's fields are read leniently, like every field the
// snapshot's capacity does not depend on: a value of an unexpected type
// reads as "not given" rather than failing the poll.

// PendingJob is a pending job as Slurm holds it now: State.Pending lists
// those with a gangtopo decision in their AdminComment, State.Queued every
// one (the quota's waiting demand; Decision is "" without one).
type PendingJob struct {
	// ID names the job for scontrol update: "123", or "123+1" for a
	// component of a heterogeneous job (the leader's own ID would update
	// every component).
	ID string
	// TaskID names a task of a job array split off into its own record
	// ("123_4"), which an update may name instead of ID; "" otherwise.
	TaskID string
	// Target is what an update of this record alone names: ID, except for
	// an array's record of pending tasks, "123_[5-9]", because "123" would
	// update the array's running tasks too (and fail for them).
	Target   string
	Priority uint32
	Submit   time.Time
	// Eligible is the job's begin time (squeue's eligible_time: slurmctld
	// packs a job's begin time there), zero when not set: a requeued
	// job's is Slurm's requeue delay on from the requeue.
	Eligible time.Time
	Reason   string // Slurm's state_reason
	// Dependency is the job's dependency list as Slurm holds it ("" when
	// it has none left, or squeue did not say).
	Dependency string
	// Decision is the AdminComment holding the decision line.
	Decision string
	// Job is the job's fields as the plugin reads them, with what gangtopo
	// wrote into them.
	Job jobsubmit.Job
	// User is the job's user name; Facts its QOS, account, reservation.
	User  string
	Facts JobFacts
	// UserIDKnown says squeue gave the owner's uid (Job.UserID).
	UserIDKnown bool
}

// pendingRaw holds the fields read for pending jobs.
type pendingRaw struct {
	name, features, prefer, reqNodes, excNodes          string
	tresJob, tresNode, tresSocket, tresTask             string
	cpusPerTres, memPerTres, arrayTasks, reason, hetSet string
	dependency                                          string
	userID, priority, submit, eligible, nodeCount       int64
	maxNodes                                            int64
	tasks, cpusPerTask, memNode, memCPU, perNode        int64
	arrayJob, hetJob, hetOffset, arrayTask              int64
	arrayTaskSet, userIDSet                             bool
}

// pendingField reads one of the fields above; handled is false for any
// other key (the caller skips it).
func (s *jsonScanner) pendingField(key []byte, p *pendingRaw) (handled bool, err error) {
	switch string(key) {
	case "array_task_id": // null (23.02+: not set) for a job, or an array's pending record
		p.arrayTask, p.arrayTaskSet, err = s.looseNum()
		return true, err
	case "user_id": // whose job: the owner job_modify checks (Bindings)
		p.userID, p.userIDSet, err = s.looseNum()
		return true, err
	}
	if dst := p.strField(string(key)); dst != nil {
		*dst, err = s.looseStr()
		return true, err
	}
	if dst := p.intField(string(key)); dst != nil {
		*dst, err = s.looseInt()
		return true, err
	}
	return false, nil
}

func (p *pendingRaw) strField(key string) *string {
	switch key {
	case "name":
		return &p.name
	case "features":
		return &p.features
	case "prefer":
		return &p.prefer
	case "required_nodes":
		return &p.reqNodes
	case "excluded_nodes":
		return &p.excNodes
	case "tres_per_job":
		return &p.tresJob
	case "tres_per_node":
		return &p.tresNode
	case "tres_per_socket":
		return &p.tresSocket
	case "tres_per_task":
		return &p.tresTask
	case "cpus_per_tres":
		return &p.cpusPerTres
	case "memory_per_tres":
		return &p.memPerTres
	case "array_task_string":
		return &p.arrayTasks
	case "state_reason":
		return &p.reason
	case "dependency":
		return &p.dependency
	case "het_job_id_set":
		return &p.hetSet
	}
	return nil
}

func (p *pendingRaw) intField(key string) *int64 {
	switch key {
	case "priority":
		return &p.priority
	case "submit_time":
		return &p.submit
	case "eligible_time":
		return &p.eligible
	case "node_count":
		return &p.nodeCount
	case "max_nodes":
		return &p.maxNodes
	case "tasks":
		return &p.tasks
	case "cpus_per_task":
		return &p.cpusPerTask
	case "memory_per_node":
		return &p.memNode
	case "memory_per_cpu":
		return &p.memCPU
	case "tasks_per_node":
		return &p.perNode
	case "array_job_id":
		return &p.arrayJob
	case "het_job_id":
		return &p.hetJob
	case "het_job_offset":
		return &p.hetOffset
	}
	return nil
}

// looseStr reads a string; any other value reads as "".
func (s *jsonScanner) looseStr() (string, error) {
	if c := s.peek(); c == '"' || c == 'n' {
		return s.str()
	}
	return "", s.skip()
}

// looseInt reads an integer or a wrapped number (23.02+, slurmjson.go);
// anything else reads as 0.
func (s *jsonScanner) looseInt() (int64, error) {
	v, _, err := s.looseNum()
	return v, err
}

// looseNum is looseInt that says whether a value was set.
func (s *jsonScanner) looseNum() (int64, bool, error) {
	if c := s.peek(); c == '-' || c >= '0' && c <= '9' || c == 'n' || c == '{' {
		return s.num()
	}
	return 0, false, s.skip()
}

// pendingJob makes the PendingJob of the pending job j from its raw
// fields; decided is false when its AdminComment carries no gangtopo
// decision (Decision is then "").
func (p *pendingRaw) pendingJob(j *Job, adminComment string) (pj PendingJob, decided bool) {
	if _, err := jobsubmit.ParseDecision(adminComment); err != nil {
		adminComment = ""
	}
	pj = PendingJob{ID: j.ID, Priority: uint32(min(max(p.priority, 0), 1<<32-1)), Reason: p.reason, Dependency: p.dependency, Decision: adminComment,
		Job: p.job(j, adminComment), User: j.User, Facts: j.Facts, UserIDKnown: p.userIDSet && p.userID >= 0}
	if p.submit > 0 {
		pj.Submit = time.Unix(p.submit, 0).UTC()
	}
	if p.eligible > 0 {
		pj.Eligible = time.Unix(p.eligible, 0).UTC()
	}
	if p.hetSet != "" && p.hetJob > 0 {
		pj.ID = fmt.Sprintf("%d+%d", p.hetJob, p.hetOffset)
		pj.Job.HetJob, pj.Job.HetOffset = true, u32(p.hetOffset)
	}
	pj.Target = pj.ID
	if p.arrayJob > 0 && p.arrayTasks != "" {
		pj.Job.ArrayInx = p.arrayTasks // the tasks still pending in this record
		tasks, _, _ := strings.Cut(p.arrayTasks, "%")
		pj.Target = fmt.Sprintf("%d_[%s]", p.arrayJob, tasks)
	}
	if p.arrayJob > 0 && p.arrayTaskSet {
		pj.TaskID = fmt.Sprintf("%d_%d", p.arrayJob, p.arrayTask)
	}
	return pj, adminComment != ""
}

// job is the job's fields in the plugin's terms. A node count is the
// user's (or gangtopo's) only when a maximum is set too: for a job
// without -N, Slurm reports its own estimate as node_count.
func (p *pendingRaw) job(sj *Job, adminComment string) jobsubmit.Job {
	j := jobsubmit.Job{UserID: u32(p.userID), Name: p.name, Partition: sj.Partition,
		TresPerJob: p.tresJob, TresPerNode: p.tresNode, TresPerSocket: p.tresSocket, TresPerTask: p.tresTask,
		CPUsPerTres: p.cpusPerTres, MemPerTres: p.memPerTres, Features: p.features, Prefer: p.prefer,
		ReqNodes: p.reqNodes, ExcNodes: p.excNodes, AdminComment: adminComment,
		NumTasks: u32(p.tasks), NtasksPerNode: u16(p.perNode), CPUsPerTask: u16(p.cpusPerTask), MinCPUs: u32(int64(sj.CPUs))}
	if p.maxNodes > 0 {
		j.MinNodes, j.MaxNodes = u32(p.nodeCount), u32(p.maxNodes)
	}
	switch {
	case p.memNode > 0:
		j.PnMinMemory = uint64(p.memNode)
	case p.memCPU > 0:
		j.PnMinMemory = uint64(p.memCPU) | 1<<63 // MEM_PER_CPU
	}
	return j
}

func u32(v int64) uint32 { return uint32(min(max(v, 0), 1<<32-2)) }
func u16(v int64) uint16 { return uint16(min(max(v, 0), 1<<16-2)) }

// Bindings lists gangtopo's part of each pending job's fields (occupancy
// Binding), for the plugin's job_modify: the features expression of its
// decision when the job's features still end with it, the exclusions the
// decision added, and the owner's uid (Slurm 22.05 asks job_modify before
// it checks the caller may update the job). prefix is the plugin's
// feature_prefix.
func Bindings(pending []PendingJob, prefix string) []occupancy.Binding {
	var out []occupancy.Binding
	for _, pj := range pending {
		d, err := jobsubmit.ParseDecision(pj.Decision)
		if err != nil || !d.Binds() {
			continue
		}
		b := occupancy.Binding{Job: pj.ID, Excluded: d.Excluded, User: pj.Job.UserID, HasUser: pj.UserIDKnown}
		if len(d.Bound) > 0 {
			if expr := jobsubmit.BindingExpr(prefix, d.Bound); strings.HasSuffix(pj.Job.Features, expr) {
				b.Features = expr
			}
		}
		if b.Features == "" && b.Excluded == "" {
			continue
		}
		out = append(out, b)
		if pj.TaskID != "" {
			b.Job = pj.TaskID
			out = append(out, b)
		}
	}
	return out
}

// PendingHolds lists the holds named by the decisions of the pending jobs
// (jobsubmit.Decision.Hold), for the plugin: a hold it keeps whose job no
// snapshot lists as pending any more is let go (spank/ctld, Store). Only
// AdminComment is read (PendingJob.Decision), which users cannot write:
// a user cannot keep someone's hold alive by naming it in a comment.
func PendingHolds(pending []PendingJob) map[string]bool {
	out := map[string]bool{}
	for _, pj := range pending {
		if d, err := jobsubmit.ParseDecision(pj.Decision); err == nil && d.Hold != "" {
			out[d.Hold] = true
		}
	}
	return out
}
