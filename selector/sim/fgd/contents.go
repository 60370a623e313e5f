package fgd

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Contents says what holds a run's idle capacity at the end: for each
// combination of shares found on a GPU ("810", "470+470", "" for a GPU
// nobody uses), how many GPUs hold it and how much they leave free. The
// idle-capacity buckets of Result.Idle say how big the leftovers are;
// this says which pods left them.
type Contents map[string]Leftover

// Leftover is one combination's part of the idle capacity.
type Leftover struct {
	GPUs      int
	IdleMilli int64
}

// gpuLoads records the shares placed on every GPU during a run.
type gpuLoads struct {
	c      *topology.Cluster
	shares [][]uint16 // by GPUID
}

func newGPULoads(c *topology.Cluster) *gpuLoads {
	return &gpuLoads{c: c, shares: make([][]uint16, len(c.GPUs))}
}

func (g *gpuLoads) add(a occupancy.Allocation) {
	for _, na := range a.Nodes {
		node := &g.c.Nodes[na.Node]
		for _, i := range na.GPUs {
			id := node.GPU(i)
			g.shares[id] = append(g.shares[id], na.Milli)
		}
	}
}

// contents groups the GPUs by the shares they hold, largest share first.
func (g *gpuLoads) contents(s *occupancy.Snapshot) Contents {
	out := Contents{}
	var b strings.Builder
	for id, sh := range g.shares {
		sort.Slice(sh, func(a, b int) bool { return sh[a] > sh[b] })
		b.Reset()
		for k, m := range sh {
			if k > 0 {
				b.WriteByte('+')
			}
			b.WriteString(strconv.Itoa(int(m)))
		}
		l := out[b.String()]
		l.GPUs++
		l.IdleMilli += int64(s.FreeMilli[id])
		out[b.String()] = l
	}
	return out
}
