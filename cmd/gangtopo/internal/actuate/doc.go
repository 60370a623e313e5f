// Package actuate is the one door through which gangtopo changes Slurm:
// every `scontrol update`, `scontrol requeue`, reservation and `sacctmgr`
// change that the controller's duties (re-binding, defragmentation,
// quotas) or the commands (`defrag apply`, `unbind --clear`, `quota sync`,
// `quota off`) make goes through Door.Do, so "what can gangtopo do to my
// cluster" is this package, and its guarantees are tested here once.
//
// Door.Do, for one Change:
//
//  1. Dry run (actions.dry_run): the change is logged as one that would
//     be made, and ErrDryRun returned; nothing else happens.
//  2. Leader: only the controller beside the slurmctld in control acts
//     (Leader, checked once a cycle by Door.Begin); the others publish
//     snapshots only (ErrNotLeader). Commands run by an administrator act
//     as themselves (Always).
//  3. Limits: at most actions.max_per_cycle changes a cycle, all duties
//     together (ErrLimit); after a command ran out of time, none for the
//     rest of the cycle (ErrBusy: slurmctld is slow, the next would wait
//     as long); a change that failed for a job is not tried again for that
//     job until its back-off ends (ErrBackoff: doubled at each failure).
//  4. Audit: one JSON line is appended, and synced, before the command
//     runs ("intent"); if it cannot be written the change is not made
//     (ErrAudit). A second line says how it ended. A change whose second
//     line is missing (the process died in between) counts as made.
//  5. The command runs (no shell; each argument its own word), killed
//     after its timeout.
//
// What gangtopo holds or pins is recorded in Slurm itself, so that a
// restarted controller, or the backup that takes over, finds it: a hold
// is a reservation named HoldPrefix+job whose end Slurm keeps; a pin is a
// mark in the job's AdminComment (Mark, which users cannot write) with its
// owner, expiry and what to put back. Held lists both from what Slurm
// says; the duties undo what has expired.
package actuate
