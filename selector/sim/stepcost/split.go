package stepcost

// Split is how a job of GPUs ranks splits: TP-way tensor slices, PP
// pipeline stages, DP replicas (GPUs = TP x PP x DP), and for a
// mixture-of-experts job EP-way expert groups among its data-parallel
// ranks. Ranks are numbered as Megatron-LM numbers them, tensor rank
// fastest, then data, then pipeline: rank = tp + TP x (dp + DP x pp); the
// job's ranks are its GPUs in allocation order (servers in order, GPUs by
// index), as Slurm numbers a job's tasks.
type Split struct {
	TP, PP, DP, EP int
}

// maxTP and maxPP bound the tensor and pipeline degrees the classes use:
// a tensor slice fits an 8-GPU server, and Megatron's published runs
// pipeline over at most a few dozen stages; 8 keeps stages deep enough
// for the pipeline bubble to stay small at the trace's sizes.
const (
	maxTP = 8
	maxPP = 8
)

// splitFor is how class c splits a job of g GPUs.
func splitFor(c *Class, g int) Split {
	switch c.shape {
	case tensorOnly:
		return Split{TP: g, PP: 1, DP: 1, EP: 1}
	case threeD:
		tp := pow2Divisor(g, maxTP)
		pp := largestDivisor(g/tp, maxPP)
		return Split{TP: tp, PP: pp, DP: g / (tp * pp), EP: 1}
	case experts:
		return Split{TP: 1, PP: 1, DP: g, EP: pow2Divisor(g, maxTP)}
	}
	return Split{TP: 1, PP: 1, DP: g, EP: 1}
}

// pow2Divisor is the largest power of two that divides g, at most limit.
func pow2Divisor(g, limit int) int {
	d := 1
	for d*2 <= limit && g%(d*2) == 0 {
		d *= 2
	}
	return d
}

// largestDivisor is the largest divisor of n that is at most limit.
func largestDivisor(n, limit int) int {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// demands are a job's demands per parallelism (GB/s per TFLOP/s of peak)
// under class c's band b workload, split as s.
func demands(c *Class, b Band, s Split) [NumParallelisms]float64 {
	m := &c.Band[b]
	var d [NumParallelisms]float64
	switch c.shape {
	case dataOnly:
		if s.DP > 1 {
			d[Data] = ScalingDemand(m.ScalingFactor, cnnBusGBs, cnnPeakTFLOPS)
		}
	case tensorOnly:
		d[Tensor] = TensorDemand(m.Hidden, s.TP)
	case threeD:
		d[Tensor] = TensorDemand(m.Hidden, s.TP)
		if s.PP > 1 {
			d[Pipeline] = PipelineDemand(m.Hidden, m.Layers/s.PP)
		}
		d[Data] = DataDemand(s.DP)
	case experts:
		d[Expert] = m.ExpertScale * ExpertDemand(m.MoE, s.EP)
		d[Data] = DataDemand(s.DP)
	}
	return d
}
