// Package deployed models gangtopo as a cluster runs it, for the
// simulators: the decision job_submit/gangtopo ships (selector/jobsubmit,
// the same code that runs inside slurmctld) rewrites each job at submit,
// and stock Slurm (selector/sim/stockslurm) places the rewritten job when
// it schedules it: the constraint's matching OR in order, the excluded
// nodes, the -N/--gpus-per-node shape, node weights, Slurm's own GPU
// indices. This is the "gangtopo-slurm" policy; "gangtopo" in the
// simulators is the engine placing every job itself.
//
//	request (a trace's job)
//	  -> SbatchJob       the job_desc_msg_t fields sbatch would send for it
//	  -> Path.Submit     jobsubmit.Decider.Decide on the snapshot of now
//	  -> Result.Apply    the job with the rewrite applied (as the shim writes it)
//	  -> Path.Start      stockslurm on the snapshot when Slurm schedules it
//
// What the model leaves out: the snapshot the plugin decides on is the
// simulator's own state (the controller's lags by up to a poll interval,
// which the plugin's held decisions cover), and Slurm's GPU shards are
// whole milli-GPU shares (1,000 shards per GPU).
package deployed
