package stepcost

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Parallelism is one way a job splits its work, each with its collective.
type Parallelism int

const (
	Data     Parallelism = iota // gradients all-reduced across replicas
	Tensor                      // activations all-reduced inside each layer
	Pipeline                    // activations sent stage to stage
	Expert                      // tokens exchanged all-to-all
	NumParallelisms
)

var parallelismNames = [NumParallelisms]string{"data", "tensor", "pipeline", "expert"}

func (p Parallelism) String() string { return parallelismNames[p] }

// Band picks the low, central or high end of every class's published
// range: the least sensitive figures, the middle ones, the most sensitive.
type Band int

const (
	Low Band = iota
	Central
	High
	NumBands
)

var bandNames = [NumBands]string{"low", "central", "high"}

func (b Band) String() string { return bandNames[b] }

// ParseBand reads low, central or high.
func ParseBand(s string) (Band, error) {
	for b, name := range bandNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Band(b), nil
		}
	}
	return 0, fmt.Errorf("unknown band %q (want low, central or high)", s)
}

// shape is how a class splits a job of g GPUs.
type shape int

const (
	dataOnly   shape = iota // g replicas
	tensorOnly              // one g-way tensor slice
	threeD                  // Megatron: tensor, then data, then pipeline
	experts                 // expert groups inside data parallelism
)

// Workload is a published model's shape, for the demand formulas.
type Workload struct {
	Name          string
	Hidden        int
	Layers        int
	MoE           MoE     // zero for a dense model
	ExpertScale   float64 // the band's factor on the expert demand (1: none)
	ScalingFactor float64 // data-parallel classes: the measured scaling factor
}

// Class is a kind of job: how it splits and, per band, the model whose
// published figures give its demands.
type Class struct {
	Name             string
	MinGPUs, MaxGPUs int // sizes it is drawn for (MaxGPUs 0: no bound)
	// Weight is its share of the jobs of a size it is drawn for, against
	// the other classes drawn for that size: an assumption (docs/replay.md).
	Weight float64
	shape  shape
	Band   [NumBands]Workload
}

// Measured data-parallel scaling: Zhang et al., "Is Network the Bottleneck
// of Distributed Training?" (NetAI'20): Horovod on 64 GPUs of AWS servers
// on 100 Gb/s reached 60% to 76% of linear scaling. Read as 8-GPU V100
// servers of one 100 Gb/s NIC each (p3dn.24xlarge), a ring over whole
// servers runs at one NIC's 12.5 GB/s, and a V100 peaks at 125 TFLOP/s.
const (
	cnnBusGBs     = 12.5
	cnnPeakTFLOPS = 125
)

// Published transformer shapes: Llama 2 (Touvron et al., 2023), GPT-3
// (Brown et al., 2020), Megatron-LM's 1T GPT (Narayanan et al., SC'21),
// Mixtral 8x7B (Jiang et al., 2024; 8 key-value heads of 128, top-2 of 8
// experts; sequences of 4,096 tokens assumed).
var (
	llama7B   = Workload{Name: "Llama-2-7B", Hidden: 4096, Layers: 32}
	llama13B  = Workload{Name: "Llama-2-13B", Hidden: 5120, Layers: 40}
	llama70B  = Workload{Name: "Llama-2-70B", Hidden: 8192, Layers: 80}
	gpt175B   = Workload{Name: "GPT-3-175B", Hidden: 12288, Layers: 96}
	megatron1 = Workload{Name: "Megatron-1T", Hidden: 25600, Layers: 128}
	mixtral   = MoE{Hidden: 4096, FFN: 14336, KVDim: 1024, Seq: 4096, TopK: 2, Experts: 8}
)

// Classes are the workload classes jobs are drawn from, with their
// weights. The mix and the weights are assumptions (the Philly trace
// names no model); each class's demands come from published figures.
var Classes = []Class{
	{Name: "dp-cnn", MinGPUs: 2, Weight: 1, shape: dataOnly, Band: [NumBands]Workload{
		{Name: "Horovod at 76% scaling", ScalingFactor: 0.76},
		{Name: "Horovod at 68% scaling", ScalingFactor: 0.68},
		{Name: "Horovod at 60% scaling", ScalingFactor: 0.60}}},
	{Name: "llm-tp", MinGPUs: 2, MaxGPUs: 8, Weight: 1, shape: tensorOnly, Band: [NumBands]Workload{llama70B, llama13B, llama7B}},
	{Name: "llm-3d", MinGPUs: 9, Weight: 1, shape: threeD, Band: [NumBands]Workload{megatron1, gpt175B, llama70B}},
	{Name: "moe", MinGPUs: 9, Weight: 1, shape: experts, Band: [NumBands]Workload{
		{Name: "Mixtral-8x7B, half the formula's all-to-all", Hidden: 4096, Layers: 32, MoE: mixtral, ExpertScale: 0.5},
		{Name: "Mixtral-8x7B", Hidden: 4096, Layers: 32, MoE: mixtral, ExpertScale: 1},
		{Name: "Mixtral-8x7B, twice the formula's all-to-all", Hidden: 4096, Layers: 32, MoE: mixtral, ExpertScale: 2}}},
}

// mix hashes a name to 64 well-spread bits: FNV-1a, then splitmix64's
// finalizer (FNV alone leaves the high bits of names that differ in their
// last digits close together).
func mix(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := h.Sum64()
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fits says whether the class is drawn for jobs of g GPUs.
func (c *Class) fits(g int) bool { return g >= c.MinGPUs && (c.MaxGPUs == 0 || g <= c.MaxGPUs) }

// Draw picks the class of a job of g GPUs from its name: a hash of the
// name, so a job gets the same class under every policy and band. Jobs
// of one GPU have no collective: nil.
func Draw(name string, g int) *Class {
	total := 0.0
	for i := range Classes {
		if Classes[i].fits(g) {
			total += Classes[i].Weight
		}
	}
	if total == 0 {
		return nil
	}
	u := float64(mix(name)>>11) / (1 << 53) * total
	var last *Class
	for i := range Classes {
		if c := &Classes[i]; c.fits(g) {
			last = c
			if u -= c.Weight; u < 0 {
				return c
			}
		}
	}
	return last
}
