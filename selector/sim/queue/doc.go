// Package queue is gangtopo's time-based gang replay: a discrete-event
// simulator that runs a job trace (submit time, duration, GPUs) through a
// placement policy on a real topology and measures what gangs live
// through: queue waits by size, completion times, utilisation, how often
// a gang got the tightest domain it could have had, and the run time lost
// to placements that spread it.
//
// Two queue models:
//
//	Replay      all-or-nothing policies (gangtopo, Slurm): FIFO by submit
//	            order with EASY backfill, after Slurm's sched/backfill
//	            (backfill.go says exactly what is modelled)
//	ReplayPods  naive-pods: Kubernetes without gang scheduling, pod by
//	            pod, with kube-scheduler's queue and back-off, partial
//	            gangs holding GPUs, rendezvous timeouts and deadlock
//	            detection (pods.go)
//
// A job placed with allocation a ends after duration * Slowdown.Factor
// (slowdown.go: the locality model, after the Philly and Tiresias
// findings). Summarize turns a Result into the reported figures
// (metrics.go); StrandedSteps and FreeWhole turn it into figures over
// time, from the nodes each run held (timeline.go).
//
// The package is pure: no files, no clock, no logging. Traces are read
// and time-scaled by the caller (cmd/gangtopo replay); the policy is any
// value with Place(snapshot, request) (allocation, ok), the shape the
// engine (GangTopo here), selector/sim/stockslurm and selector/sim/fgd share.
// Given the same jobs, policy and configuration a replay is
// deterministic.
package queue
