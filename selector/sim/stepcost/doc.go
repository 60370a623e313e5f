// Package stepcost is the replay's grounded slowdown model: how much
// longer a distributed training job runs because of where its GPUs are,
// from the physics of its collectives and published measurements of real
// models.
//
// A training step is computation plus the collectives that tie the GPUs
// together, one kind per way the job splits its work:
//
//	data parallel      gradients all-reduced over the data-parallel ranks
//	tensor parallel    activations all-reduced inside every layer
//	pipeline parallel  activations sent from one stage to the next
//	expert parallel    tokens exchanged all-to-all around every MoE layer
//
// Each job is drawn a workload class (Classes: what kind of model it
// trains, and so how it splits and how much it sends per unit of
// computation: its demand, in GB/s of collective traffic per TFLOP/s of
// its GPUs' compute). Where the job is placed decides the bandwidth each
// collective gets: NVLink inside an island or NVLink block, PCIe between
// islands of a server, the NICs between servers (each server contributing
// its GPUs' share), divided by the oversubscription of the leaves and
// spines the traffic leaves. The step then takes
//
//	step(placement) = compute x (1 + sum over p of demand_p / bandwidth_p(placement))
//
// and the slowdown is step(placement) / step(best), best being the same
// job packed on whole servers in the tightest domain that could hold it
// on the empty cluster. The trace's duration is taken as the run time at
// best, as the fixed factors took it (queue.Slowdown).
//
// Why this and not factors per tier: the cost of a placement is not a
// property of the tier alone. A data-parallel job on four servers with
// two GPUs each runs at a quarter of the network bandwidth of the same job
// on two full servers, in the same leaf; a tensor-parallel slice that
// leaves its NVLink island drops from 450 GB/s to one NIC's 50; a
// pipeline's stage boundary barely notices a spine. The model gets these
// from the cluster file's speeds (topology.Speeds, leaf and spine
// oversubscription) and the class's demands, each of which docs/replay.md
// traces to a source.
//
// Every demand has a low, central and high value (Band) from the spread of
// the published figures; the replay runs each and reports the band.
//
// The package is pure: no files, no clock, no logging.
package stepcost
