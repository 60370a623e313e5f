// Package defragrun carries defragmentation plans out through Slurm, for
// `gangtopo defrag apply` and the controller daemon's policy: it reads the
// cluster as it is now (View), plans with selector/defrag under
// gangtopo.yaml's defrag: section (Planner: the site's scope, the cost
// model, the limits against the audit log), and acts (Executor):
//
//  1. hold: a Slurm reservation on the nodes the plan frees, for the
//     gang's user, created with Flags=IGNORE_JOBS before anything is
//     requeued, and the gang attached to it (ReservationName=): from then on
//     no other job can take the freed room, and the gang can start only
//     there;
//  2. re-check: the cluster is read again and the plan made again inside
//     the held domain; a job is requeued only if both plans name it, and a
//     re-plan that needs a job the plan did not name abandons the plan (the
//     hold is ended);
//  3. requeue: `scontrol requeue` for each job, one audit line each;
//     with defrag.expedite, each requeued job is made eligible at once
//     (StartTime=now once Slurm has it pending again) instead of after
//     Slurm's requeue delay: the held room is not its to take;
//  4. release: once the gang runs, it is taken out of the reservation
//     (ReservationName= on the running job) and the reservation deleted.
//     Never end the hold with EndTime=now while the gang runs inside it:
//     slurmctld ends the jobs of a reservation that ends ("Reservation
//     ended for JobId=..."), which is why the gang is detached first. A
//     hold whose gang does not start within defrag.hold is ended the same
//     way, the gang left pending.
//
// Every action is one JSON line in the audit log (defrag.audit_log),
// appended under an exclusive lock; the same file is the History the
// limits are checked against, so the command and the controller share one
// rate limit and one budget.
package defragrun
