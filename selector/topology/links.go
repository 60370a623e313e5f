package topology

import (
	"fmt"
	"math"
	"strings"
)

// Speeds: how fast a GPU computes and talks to the GPUs it shares a job
// with.
//
// A collective (an all-reduce, an all-to-all, a pipeline send) runs at the
// pace of the slowest link it crosses, so where a gang's GPUs sit sets how
// long its communication takes: over NVLink inside an island (or an NVLink
// block), over PCIe through the host between islands of one server, over
// the NICs between servers, and over oversubscribed uplinks between leaves
// and spines. The cluster file may give each figure; every one it leaves
// out comes from DefaultSpeeds, the GPU model's reference system. A
// job's traffic grows with the pace of its computation, so the GPU's
// compute rate is part of the picture: the same collective costs an H100
// job a larger share of its step than a V100 job.

// Speeds are one GPU's compute rate and the bandwidths it has, in GB/s in
// each direction.
type Speeds struct {
	// DenseTFLOPS is the GPU's peak dense 16-bit tensor rate (BF16 or
	// FP16, without sparsity), in TFLOP/s.
	DenseTFLOPS float64
	// NVLinkGBs is to the GPUs of its NVLink island (or block): the GPU's
	// NVLink bandwidth. 0 when the node has no NVLink.
	NVLinkGBs float64
	// PCIeGBs is to the host: what traffic between islands of one node,
	// or to a NIC, passes through.
	PCIeGBs float64
	// NICGBs is the node's network bandwidth per GPU: the sum of its NICs'
	// rates divided by its GPUs.
	NICGBs float64
}

// ModelSpeeds is one row of the default table: a GPU model family and
// the speeds of its reference system, with where they come from.
type ModelSpeeds struct {
	// Prefix matches canonical model names ("h100" matches "h100" and
	// "h100-sxm5-80gb"); the longest matching prefix wins.
	Prefix string
	Speeds
	// Source names the datasheet or reference system, for the docs.
	Source string
	// AssumedNIC says the NIC figure is an assumption (no reference system
	// with a fixed network exists for the model).
	AssumedNIC bool
}

// speedTable is DefaultSpeeds' data (docs/cluster-file.md prints it).
// NVLink and PCIe are the datasheet figures halved to one direction; the
// NIC is the reference DGX system's compute fabric divided by its GPUs.
var speedTable = []ModelSpeeds{
	{"v100", Speeds{125, 150, 16, 6.25}, "V100 SXM2: 125 TFLOP/s FP16 tensor, NVLink 300 GB/s, PCIe Gen3 x16 32 GB/s (both directions); DGX-1V: 4x 100 Gb/s EDR for 8 GPUs", false},
	{"a100", Speeds{312, 300, 32, 25}, "A100 SXM4: 312 TFLOP/s BF16 dense, NVLink 600 GB/s, PCIe Gen4 x16 64 GB/s; DGX A100: 8x 200 Gb/s HDR for 8 GPUs", false},
	{"h100", Speeds{989, 450, 64, 50}, "H100 SXM5: 989 TFLOP/s BF16 dense, NVLink 900 GB/s, PCIe Gen5 x16 128 GB/s; DGX H100: 8x 400 Gb/s NDR for 8 GPUs", false},
	{"h200", Speeds{989, 450, 64, 50}, "H200 SXM: 989 TFLOP/s BF16 dense, NVLink 900 GB/s, PCIe Gen5 x16 128 GB/s; HGX H200: 8x 400 Gb/s for 8 GPUs", false},
	{"b200", Speeds{2250, 900, 64, 50}, "B200: 2,250 TFLOP/s BF16 dense, NVLink 1.8 TB/s, PCIe Gen5 x16 128 GB/s; DGX B200: 8x 400 Gb/s for 8 GPUs", false},
	{"gb200", Speeds{2500, 900, 64, 50}, "GB200: 2,500 TFLOP/s BF16 dense, NVLink 1.8 TB/s, PCIe Gen5 x16 128 GB/s; one 400 Gb/s NIC per GPU", false},
	{"a40", Speeds{149.7, 56.25, 32, 3.125}, "A40: 149.7 TFLOP/s FP16 tensor dense, NVLink bridge 112.5 GB/s, PCIe Gen4 x16 64 GB/s; NIC assumed 25 Gb/s per GPU", true},
	{"l40", Speeds{181, 0, 32, 3.125}, "L40: 181 TFLOP/s FP16 tensor dense, no NVLink, PCIe Gen4 x16 64 GB/s; NIC assumed 25 Gb/s per GPU", true},
	{"l40s", Speeds{362, 0, 32, 3.125}, "L40S: 362 TFLOP/s FP16 tensor dense, no NVLink, PCIe Gen4 x16 64 GB/s; NIC assumed 25 Gb/s per GPU", true},
	{"a10", Speeds{125, 0, 32, 3.125}, "A10: 125 TFLOP/s FP16 tensor dense, no NVLink, PCIe Gen4 x16 64 GB/s; NIC assumed 25 Gb/s per GPU", true},
	{"t4", Speeds{65, 0, 16, 3.125}, "T4: 65 TFLOP/s FP16 tensor, no NVLink, PCIe Gen3 x16 32 GB/s; NIC assumed 25 Gb/s per GPU", true},
}

// genericSpeeds is for a model the table does not know: V100-class
// compute and NVLink (the oldest NVSwitch generation, so the slowest a
// node with NVLink is likely to have), PCIe Gen3 and a 25 Gb/s NIC per
// GPU, all assumptions.
var genericSpeeds = ModelSpeeds{"", Speeds{125, 150, 16, 3.125}, "unknown model: V100-class compute and NVLink, PCIe Gen3, NIC 25 Gb/s per GPU (assumed)", true}

// SpeedTable lists the default speeds per GPU model family, then the row
// for models it does not know (empty prefix).
func SpeedTable() []ModelSpeeds {
	return append(append([]ModelSpeeds(nil), speedTable...), genericSpeeds)
}

// DefaultSpeeds is the reference speeds of a GPU model (canonical or not),
// and whether the model is in the table.
func DefaultSpeeds(model string) (ModelSpeeds, bool) {
	m := CanonicalModel(model)
	best, found := genericSpeeds, false
	for _, row := range speedTable {
		if strings.HasPrefix(m, row.Prefix) && len(row.Prefix) > len(best.Prefix) {
			best, found = row, true
		}
	}
	return best, found
}

// Bounds of the speeds and ratios a cluster file may give.
const (
	MaxLinkGBs          = 100000 // GB/s: far above any link today
	MaxTFLOPS           = 100000 // TFLOP/s: far above any GPU today
	MaxOversubscription = 64
)

// checkTFLOPS says what is wrong with a compute rate given in a file, or "".
func checkTFLOPS(v float64) string {
	if !(v > 0) || v > MaxTFLOPS {
		return fmt.Sprintf("%g TFLOP/s is out of range (want a number above 0 and at most %d)", v, MaxTFLOPS)
	}
	return ""
}

// checkSpeed says what is wrong with a speed given in a file (GB/s), or "".
func checkSpeed(v float64) string {
	if !(v > 0) || v > MaxLinkGBs || math.IsInf(v, 0) {
		return fmt.Sprintf("%g GB/s is out of range (want a number above 0 and at most %d)", v, MaxLinkGBs)
	}
	return ""
}

// checkOversubscription says what is wrong with a ratio given in a file, or "".
func checkOversubscription(v float64) string {
	if !(v >= 1) || v > MaxOversubscription {
		return fmt.Sprintf("%g is out of range (want a ratio of downlink to uplink bandwidth from 1, non-blocking, to %d)", v, MaxOversubscription)
	}
	return ""
}

// resolveSpeeds fills a node's speeds: what its spec gives, the rest from
// the slowest of its models' defaults. The NIC figure is its NICs' rates
// when it lists any. assumed reports that some figure came from a model
// the table does not know or a NIC the table assumes.
func resolveSpeeds(ns *NodeSpec) (s Speeds, assumed bool) {
	s = Speeds{DenseTFLOPS: math.Inf(1), NVLinkGBs: math.Inf(1), PCIeGBs: math.Inf(1), NICGBs: math.Inf(1)}
	for _, g := range ns.GPUs {
		row, known := DefaultSpeeds(g.Model)
		s.DenseTFLOPS = min(s.DenseTFLOPS, row.DenseTFLOPS)
		s.NVLinkGBs = min(s.NVLinkGBs, row.NVLinkGBs)
		s.PCIeGBs = min(s.PCIeGBs, row.PCIeGBs)
		s.NICGBs = min(s.NICGBs, row.NICGBs)
		assumed = assumed || !known || row.AssumedNIC && len(ns.NICs) == 0
	}
	if len(ns.GPUs) == 0 {
		s = genericSpeeds.Speeds
	}
	if ns.NVLinkGBs > 0 {
		s.NVLinkGBs = ns.NVLinkGBs
	}
	if ns.Links == nil {
		s.NVLinkGBs = 0
	}
	if ns.PCIeGBs > 0 {
		s.PCIeGBs = ns.PCIeGBs
	}
	if ns.DenseTFLOPS > 0 {
		s.DenseTFLOPS = ns.DenseTFLOPS
	}
	if rate := nicGbps(ns.NICs); rate > 0 && len(ns.GPUs) > 0 {
		s.NICGBs = float64(rate) / 8 / float64(len(ns.GPUs))
	}
	return s, assumed
}

// nicGbps is the sum of the NICs' rates (Gb/s).
func nicGbps(nics []NICSpec) int {
	sum := 0
	for _, n := range nics {
		sum += n.RateGbps
	}
	return sum
}
