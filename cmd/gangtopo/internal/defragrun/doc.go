// Package defragrun carries defragmentation plans out through Slurm, for
// `gangtopo defrag apply` and the controller daemon's policy: it reads the
// cluster as it is now (View), plans with selector/defrag under
// gangtopo.yaml's defrag: section (Planner: the site's scope, the cost
// model, the limits against the audit log), and acts (Executor), every
// change through the one door (actuate.Door: leader, an audit line
// written before the change, limits, back-off, dry run):
//
//  1. hold: a Slurm reservation on the nodes the plan frees, for the
//     gang's user, created with HoldFlags (IGNORE_JOBS, FLEX,
//     NO_HOLD_JOBS_AFTER_END) before anything is requeued, and the gang
//     attached to it (ReservationName=): from then on no other job can
//     take the freed room;
//  2. re-check: the cluster is read again and the plan made again inside
//     the held domain; a job is requeued only if both plans name it, and a
//     re-plan that needs a job the plan did not name abandons the plan (the
//     hold is ended);
//  3. requeue: `scontrol requeue` for each job; any requeue that does not
//     go through (Slurm refuses it, its audit line cannot be written, an
//     interrupt) ends the plan and its hold; with defrag.expedite, each
//     requeued job is made eligible at once (StartTime=now once Slurm has
//     it pending again) instead of after Slurm's requeue delay: the held
//     room is not its to take;
//  4. release: once the gang runs, it is taken out of the reservation
//     (ReservationName= on the running job) and the reservation deleted. A
//     hold whose gang does not start within defrag.hold is ended the same
//     way, the gang left pending. Should nothing end it (the controller
//     stopped), the reservation's own end leaves the gang alone: FLEX
//     keeps slurmctld from ending a gang that runs in it ("Reservation
//     ended for"), NO_HOLD_JOBS_AFTER_END from holding a gang that still
//     waits in it (priority 0, "Reservation ... was deleted").
//
// What was done is read back from the audit log (actions.audit_log,
// history.go): the limits' History, each hold's plan (Tend ends a hold
// whose plan failed or was never carried out) and each gang's back-off
// after a plan (Backoff), shared by the command and the controller, and
// kept across restarts. Only gangs pending for a reason a requeue can fix
// are planned for (Fixable). Slurm is read through its JSON where users
// write text (squeue --json for a job's state), and reservations through
// `scontrol -o show reservation` in Slurm's fixed key order (ParseHolds).
package defragrun
