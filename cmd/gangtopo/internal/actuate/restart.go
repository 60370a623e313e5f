package actuate

import "time"

// Making a requeued job eligible before Slurm's requeue delay is over
// (`scontrol update JobId=<id> StartTime=...`: defragmentation's
// expedite, the controller's rebind.restart_at_once).
//
// When slurmctld kills a job to requeue it, each of its nodes' slurmd
// revokes the job's credential at the kill's time (whole seconds,
// slurmctld's clock: slurm_cred_revoke), and refuses a later launch of
// the same job ID whose credential was made at that second or before
// (slurm_cred_revoked: ctime <= revoked). slurmctld then kills the
// restarted job for good ("Killing non-startable batch JobId=...: Job
// credential revoked"): it ends FAILED, not requeued. Seen on 22.05.8 in
// the lab: a gang made eligible with StartTime=now right after its
// requeue started on two of its old nodes in the same second and was
// killed (26.05.5's own expedited requeue was seen to restart jobs on an
// old node in the kill's second without refusal: the margin is kept on
// every series, 25.11 and the others untried). Slurm's own delay (the
// credential's lifetime plus one second) keeps clear of it; so must an
// earlier start: the job is made eligible
// no sooner than RequeueMargin after its requeue, whose time the caller
// knows (the submit time Slurm's requeue set, in whole seconds and no
// earlier than the kill, or when Slurm was seen to have requeued it).

// RequeueMargin is how long after its requeue a job may start again: two
// seconds, a credential made at a later whole second than the kill's with
// one second to spare for the clocks of the controller's host and
// slurmctld's.
const RequeueMargin = 2 * time.Second

// MayRestart says whether a job requeued at requeued may be made eligible
// at now (`StartTime=now`, which also has slurmctld schedule at once: a
// begin time a second or two on would wait for its next scheduling pass).
func MayRestart(requeued, now time.Time) bool {
	return !now.Before(requeued.Add(RequeueMargin))
}
