package quota

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// FragCharge is what each account's jobs make unusable for others: on
// every usable node, the engine's fragmentation measure of the node
// (frag.Meter.Node: the idle GPU capacity the typical request mix cannot
// use there, FGD's F_n), in GPUs, split among the accounts whose running
// jobs hold GPUs on the node, in proportion to the GPU capacity each
// holds. A whole free node and a full one cost nothing; eight 1-GPU jobs
// on eight servers are charged the seven GPUs each leaves that 8-GPU jobs
// cannot use (times those jobs' weight in the mix), one server full of
// them nothing: packing small jobs is cheaper.
//
// account names the account of snapshot job j ("" for none: its part is
// charged to nobody).
func FragCharge(m *frag.Meter, s *occupancy.Snapshot, account func(j int) string) map[string]float64 {
	type holder struct {
		account string
		milli   int
	}
	held := make([][]holder, len(s.Cluster.Nodes)) // by node, so sums go in one order
	for j := range s.Jobs {
		a := account(j)
		for _, na := range s.Jobs[j].Alloc.Nodes {
			held[na.Node] = append(held[na.Node], holder{a, len(na.GPUs) * int(na.Milli)})
		}
	}
	out := map[string]float64{}
	for n, hs := range held {
		if len(hs) == 0 {
			continue
		}
		f := m.Node(s, topology.NodeID(n)) / occupancy.WholeGPU
		total := 0
		for _, h := range hs {
			total += h.milli
		}
		if f <= 0 || total == 0 {
			continue
		}
		for _, h := range hs {
			if h.account != "" {
				out[h.account] += f * float64(h.milli) / float64(total)
			}
		}
	}
	return out
}
