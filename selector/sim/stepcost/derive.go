package stepcost

// Demands from published figures.
//
// A demand is the collective traffic a job's GPU drives per unit of its
// compute, in GB/s per TFLOP/s of peak dense rate: with demand d on a GPU
// of r TFLOP/s, a collective at bandwidth B costs d x r / B of the step's
// compute time. Each function below turns a source's published numbers
// into one; docs/replay.md lists the sources, their figures and hardware.

// Achieved is the share of its peak dense rate a large transformer run
// reaches: Megatron-LM trained a 1-trillion-parameter GPT at 502 PFLOP/s
// on 3,072 A100s, 163 TFLOP/s a GPU, 52% of peak (Narayanan et al.,
// SC'21). The transformer classes assume every GPU reaches the same.
const Achieved = 0.52

// perTFLOPS converts bytes per FLOP into GB/s per TFLOP/s of peak, at
// Achieved: (bytes/FLOP) x (Achieved x 1e12 FLOP/s) / 1e9.
func perTFLOPS(bytesPerFLOP float64) float64 { return bytesPerFLOP * Achieved * 1000 }

// TensorDemand is Megatron tensor parallelism's demand, for hidden size h
// and a t-way slice. Per layer and microbatch of b sequences of s tokens,
// each GPU all-reduces four b x s x h activations (two forward, two
// backward) of 2 bytes; a ring all-reduce moves 2(t-1)/t of the data over
// each GPU's link: 16(t-1)bsh/t bytes. The layer costs 96bsh^2/t FLOPs a
// GPU (with recomputation; Narayanan et al.'s count). Bytes per FLOP:
// (t-1)/(6h).
func TensorDemand(h, t int) float64 {
	if t < 2 {
		return 0
	}
	return perTFLOPS(float64(t-1) / (6 * float64(h)))
}

// PipelineDemand is pipeline parallelism's demand, for hidden size h and
// layersPerStage layers a stage. Each microbatch sends b x s x h
// activations forward and as many gradients back over each stage
// boundary, 2 bytes each, split over the t GPUs of the tensor slice
// (Megatron's scatter/gather): 4bsh/t bytes a GPU, against 96bsh^2 x
// layersPerStage / t FLOPs. Bytes per FLOP: 1/(24 h layersPerStage).
func PipelineDemand(h, layersPerStage int) float64 {
	return perTFLOPS(1 / (24 * float64(h) * float64(layersPerStage)))
}

// GlobalBatchTokens is the tokens of one optimizer step: Llama 2's 4M
// (Touvron et al., 2023), for the transformer classes' data parallelism.
const GlobalBatchTokens = 4 << 20

// DataDemand is the data-parallel demand of a transformer split dp ways:
// each GPU all-reduces its gradient shard once a step (2 bytes a
// parameter, a ring moving twice the data: 4 bytes a parameter) and
// computes 8 FLOPs a parameter a token (forward, recomputation, backward)
// over GlobalBatchTokens/dp tokens. Bytes per FLOP: dp/(2 x tokens).
func DataDemand(dp int) float64 {
	if dp < 2 {
		return 0
	}
	return perTFLOPS(float64(dp) / (2 * GlobalBatchTokens))
}

// ScalingDemand is the data-parallel demand behind a measured scaling
// factor: sf of linear speed-up, on GPUs of peakTFLOPS, when the ring ran
// at busGBs. The step took 1/sf of its compute, so communication was
// (1-sf)/sf of the compute time: demand x peak / bus.
func ScalingDemand(sf, busGBs, peakTFLOPS float64) float64 {
	return (1 - sf) / sf * busGBs / peakTFLOPS
}

// MoE is a mixture-of-experts transformer's shape, for ExpertDemand.
type MoE struct {
	Hidden, FFN, KVDim, Seq int
	TopK, Experts           int
}

// ExpertDemand is the all-to-all demand of expert parallelism over ep
// GPUs. Each token of each MoE layer goes to TopK experts and comes back,
// forward and backward: 4 x TopK x h values of 2 bytes, of which (ep-1)/ep
// leave the GPU. A token costs, forward, 2 FLOPs per weight it touches
// (the attention projections: 2h^2 + 2h x KVDim; TopK experts of three h x
// FFN matrices) plus 4 x Seq x h for attention, and three times that with
// the backward pass.
func ExpertDemand(m MoE, ep int) float64 {
	if ep < 2 {
		return 0
	}
	h, f := float64(m.Hidden), float64(m.FFN)
	bytes := 4 * float64(m.TopK) * h * 2 * float64(ep-1) / float64(ep)
	weights := 2*h*h + 2*h*float64(m.KVDim) + float64(m.TopK)*3*h*f
	flops := 3 * (2*weights + 4*float64(m.Seq)*h)
	return perTFLOPS(bytes / flops)
}
