// Package jobsubmit is the decision job_submit/gangtopo ships: a submitted
// Slurm job in (the job_desc_msg_t fields gangtopo reads, Job), a rewrite
// out (Result: node features, shape, excluded nodes, the decision line).
// It is pure: the occupancy snapshot and the engine's answer are the
// caller's, so the plugin inside slurmctld (spank/ctld, which adds the
// snapshot file, held decisions, the engine's deadline and on_failure) and
// the simulators (selector/sim) run the same code.
//
//	Prepare   (1) scope: GPU jobs in the configured partitions, with
//	              --gang-topology or under jobs: gpu
//	          (2) the job's TRES strings and counts become a
//	              request.Request; user mistakes are refused
//	caller    (3) a snapshot, (4) selector/place's answer
//	Rewrite   (5) the placement becomes job fields Slurm's own scheduler
//	              carries out at schedule time (rewrite.go says why these)
//
// The rewrite binds gangs to topology domains through node features
// (gt_<domain>, DomainFeature) rather than to node lists, because node
// lists go stale between submit and start. The decision is written into
// the job as one line (Decision) that `gangtopo why` reads back.
//
// A job array's tasks are each a job to the engine (tasks.go: Place puts
// them one after another). Around the decision made at submit:
//
//	binding.go  gangtopo's part of a job's fields, and the job without it
//	            (Original)
//	rebind.go   Rebind: is a pending job's binding what keeps it waiting,
//	            and what a new decision changes (the controller daemon)
//	modify.go   KeepBinding: a user's update keeps gangtopo's part (the
//	            plugin's job_modify)
package jobsubmit
