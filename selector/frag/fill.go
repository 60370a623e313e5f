package frag

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// FillModel is a look-ahead measure of fragmentation for single-node jobs:
// how much of a node's idle GPU capacity the typical workload is expected
// never to use, if the node keeps receiving typical jobs until none fits.
//
// FGD's F_n(M) asks whether one more job of each shape fits now. That
// misses what happens next: a 190-milli remnant counts as usable for the
// rare 160-milli jobs exactly as a whole GPU does for whole-GPU jobs, and a
// node whose CPUs will run out before its GPUs looks unfragmented until
// they do. The fill model follows each GPU to the end instead:
//
//	Waste[f] = f                                if no typical share fits f
//	Waste[f] = sum_{m fits} p_m Waste[f - m] / sum_{m fits} p_m   otherwise
//
// the expected free share left on a GPU with f milli free once a random
// stream of the typical single-GPU requests (shares and whole GPUs; a
// multi-GPU shape counts as that many whole GPUs) has filled it, with the
// shapes drawn in proportion to their popularity among those that fit. A
// node's waste is the sum over its GPUs plus the capacity its free CPU
// cannot feed: filling idle - waste milli-GPUs needs (idle - waste) x c
// milli-CPUs, where c is the typical GPU job's CPUs per milli-GPU, and what
// the node lacks of that is stranded:
//
//	W_n = sum_i Waste[f_i] + max(0, (sum_i f_i - sum_i Waste[f_i]) - cpuLeft/c)
//
// Unlike FGD's F_n, W_n does not count a node's idle capacity as lost for
// the shapes that may not use its GPU model. Those shapes never come to
// the node, so they leave nothing unused there: the fill process already
// draws only from the shapes that may use the model. Counting them made
// the capacity of a model that few constrained shapes name look wasted
// while idle, so jobs free to go anywhere were sent to fill it first,
// whatever its size: on the FGD traces' gpuspec33 workload they used up a
// 312-GPU model that its own jobs then could not get. Which model a job
// free to choose should leave to the jobs that cannot is a question
// between models, not inside a node; the engine answers it with the
// models' scarcity (selector/place/scarcity.go).
//
// A placement's cost is the increase of W_n. The table has 1,001 entries
// per set of GPU models (shapes restricted to a model see only its nodes),
// built once, so W_n costs a table lookup per GPU: cheaper than F_n(M).
type FillModel struct {
	Waste       [occupancy.WholeGPU + 1]float64
	CPUPerMilli float64 // 0: no typical GPU shape asks for CPUs
}

// fillUnit is one GPU's part of a typical shape in the fill process.
type fillUnit struct {
	milli  int
	weight float64
}

// NewFillModel builds the fill model of workload w for GPUs of the models
// ms (0: any): only shapes that may use those models take part.
func NewFillModel(w *Workload, ms topology.ModelSet) *FillModel {
	f := &FillModel{}
	var units []fillUnit
	var cpu, gpu float64
	for _, s := range w.Node {
		if s.GPUs == 0 || s.Milli == 0 || (ms != 0 && s.Models != 0 && s.Models&ms == 0) {
			continue
		}
		cpu += s.Weight * float64(s.CPUMilli)
		gpu += s.Weight * float64(s.GPUs*s.Milli)
		units = append(units, fillUnit{s.Milli, s.Weight * float64(s.GPUs)})
	}
	for _, g := range w.Gangs {
		if ms == 0 || g.Models == 0 || g.Models&ms != 0 {
			units = append(units, fillUnit{occupancy.WholeGPU, g.Weight * float64(g.Nodes)})
		}
	}
	if gpu > 0 {
		f.CPUPerMilli = cpu / gpu
	}
	for free := 0; free <= occupancy.WholeGPU; free++ {
		fit, acc := 0.0, 0.0
		for _, u := range units {
			if u.milli <= free {
				fit += u.weight
				acc += u.weight * f.Waste[free-u.milli]
			}
		}
		if fit == 0 {
			f.Waste[free] = float64(free)
		} else {
			f.Waste[free] = acc / fit
		}
	}
	return f
}

// NodeWaste is W_n for a node with these free shares and free CPUs.
func (f *FillModel) NodeWaste(free []uint16, cpuLeft int64) float64 {
	idle, waste := 0.0, 0.0
	for _, g := range free {
		idle += float64(g)
		waste += f.Waste[g]
	}
	if f.CPUPerMilli > 0 {
		if stranded := idle - waste - float64(cpuLeft)/f.CPUPerMilli; stranded > 0 {
			waste += stranded
		}
	}
	return waste
}

// Fill returns the fill model for nodes with GPUs of the models ms.
func (m *Meter) Fill(ms topology.ModelSet) *FillModel {
	if f, ok := m.fill[ms]; ok {
		return f
	}
	f := NewFillModel(m.Workload, ms)
	m.fill[ms] = f
	return f
}

// nodeFill returns node n's fill model, remembered per node.
func (m *Meter) nodeFill(n topology.NodeID) *FillModel {
	if m.fillByNode == nil {
		m.fillByNode = make([]*FillModel, len(m.Cluster.Nodes))
	}
	f := m.fillByNode[n]
	if f == nil {
		f = m.Fill(m.Cluster.Nodes[n].Models)
		m.fillByNode[n] = f
	}
	return f
}

// Waste is W_n of node n in snapshot s (0 for unusable nodes).
func (m *Meter) Waste(s *occupancy.Snapshot, n topology.NodeID) float64 {
	if !s.State[n].Usable() {
		return 0
	}
	return m.nodeFill(n).NodeWaste(s.NodeFree(n), int64(s.FreeCPUMilli[n]))
}

// WasteAfter is W_n of node n with the free shares and CPUs given.
func (m *Meter) WasteAfter(n topology.NodeID, free []uint16, cpuLeft int32) float64 {
	return m.nodeFill(n).NodeWaste(free, int64(cpuLeft))
}
