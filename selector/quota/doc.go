// Package quota is gangtopo's dynamic GPU quotas: each account (team) is
// guaranteed a share of the cluster's GPUs, lends what it leaves idle,
// and gets it back by preemption of what others borrowed. It is pure: the
// caller says what runs and waits, and carries decisions out (the
// controller through Slurm's QOS and preempt/qos, the replay in its own
// state).
//
// # The ledger, every cycle
//
// From the shares (Shares) and the jobs (Job: account, GPUs, running or
// waiting, borrowing or not) Compute makes the Ledger:
//
//	in use     GPUs the account's running jobs hold
//	charge     fragmentation charge: weight x the free GPUs stranded on
//	           nodes the account's jobs broke (FragCharge), 0 by default
//	charged    in use + charge: what counts against the share
//	borrowed   GPUs held beyond the share: max(0, in use - guaranteed)
//	waiting    GPUs its waiting jobs ask for
//	kept       what it keeps back of its idle share for its own waiting
//	           jobs: those that fit the idle share, smallest first (a job
//	           larger than what is left cannot use it alone: it borrows)
//	lending    it lends: lend is on, and nothing of it waits or its idle
//	           share exceeds what it keeps
//	pool       what may be lent: the idle shares (guaranteed - charged)
//	           less what is kept, of the lending accounts, plus the GPUs
//	           in no share
//	lent       the borrowed GPUs, attributed to the accounts whose idle
//	           share they sit in (GPUs in no share first)
//
// A job that fits its account's share (Ledger.Entitled: charged + its
// GPUs within guaranteed) runs as usual and is never taken. A job beyond
// it may borrow (Ledger.MayBorrow: the account's cap allows, and the pool
// has room for the part beyond the account's share: the job takes what is
// left of its share first), and then runs preemptible, all of it; unless it may not be requeued
// (an salloc session, --no-requeue): preempting it would cancel it, so it
// never borrows (Admit says CannotBorrow) and waits for its own share. A
// lender with waiting jobs stops
// lending what they ask for, so the pool shrinks at once; a quiet account
// lends again. What it keeps is bounded by its jobs that fit its idle
// share: a team waiting only for jobs larger than that still lends (teams
// each waiting for the others' idle shares would otherwise wait for ever
// on an idle cluster).
//
// # Reclaim
//
// When an entitled job cannot start, Reclaim chooses what to take back:
// borrowed jobs only, and from each account only what it holds beyond its
// share (an account is never left below its share by a reclaim), chosen
// by selector/defrag's victim choice (defrag.For) so that what is freed is
// the shape the job needs (one leaf for a leaf gang) at the least work
// lost.
package quota
