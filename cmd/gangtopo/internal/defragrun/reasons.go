package defragrun

// Which pending gangs a plan can start. Slurm says why a job waits
// (squeue's state_reason, slurm/slurm.h enum job_state_reason, named by
// job_state_reason_string; the same names from 22.05 to 26.05); a plan
// frees GPUs, so it can only start a gang that waits for GPUs:
//
//   - Resources: no room now (26.05's topology/tree and block say so
//     too, with "Insufficient resources in topology unit" as the
//     description);
//   - Priority: other jobs come first; the held room is the gang's alone,
//     so they do not take it;
//   - ReqNodeNotAvail, NodeDown: nodes it could use are down, drained or
//     reserved; the plan is made on the nodes that are up, so it frees
//     room where the gang can start.
//
// Every other reason is one no requeue fixes, and a plan would only cost
// its victims their work: the gang's QOS or association limits (QOS*,
// Assoc*, Max*PerAccount, MaxMemPerLimit, AccountingPolicy), licenses,
// partition limits or a partition down or inactive (Partition*), held by
// its user or an administrator (JobHeld*, JobHoldMaxRequeue), waiting for
// a dependency (Dependency, DependencyNeverSatisfied) or a begin time
// (BeginTime), array task limits, burst buffers, constraints no node
// satisfies (BadConstraints, 23.02+'s Constraints), a reservation of its
// own (Reservation, ReservationDeleted), or None: Slurm has not looked at
// it yet, and will say why it waits at its next scheduling pass.

// fixable are the reasons a plan can fix (see above).
var fixable = map[string]bool{"Resources": true, "Priority": true, "ReqNodeNotAvail": true, "NodeDown": true}

// Fixable says whether a gang pending for Slurm's reason can be started by
// a plan.
func Fixable(reason string) bool { return fixable[reason] }
