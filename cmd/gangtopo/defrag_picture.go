package main

import (
	"fmt"
	"io"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/picture"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// planPictures pictures a defragmentation plan on snapshot s of cluster c:
// before, the GPUs it requeues marked; after, those free again, the jobs
// it moves in their new places and the gang in, marked.
func planPictures(c *topology.Cluster, s *occupancy.Snapshot, p defrag.Plan) (before, after picture.View, err error) {
	before = picture.FromCluster(c, s)
	before.Title = "before"
	next := s.Clone()
	for _, j := range p.Evict {
		before.Mark(c, s.Jobs[j].Alloc, picture.Requeued)
		if err := next.Release(s.Jobs[j].Alloc); err != nil {
			return before, after, err
		}
	}
	for _, m := range p.Moves {
		if err := next.Allocate(m.Alloc); err != nil {
			return before, after, err
		}
	}
	if err := next.Allocate(p.Gang.Alloc); err != nil {
		return before, after, err
	}
	after = picture.FromCluster(c, next)
	after.Title = "after"
	after.Mark(c, p.Gang.Alloc, picture.Gang)
	return before, after, nil
}

// writePlanPictures prints before and after, the rows of the plan's domain
// only, and draws the whole cluster both ways into svg ("" for none).
func writePlanPictures(w io.Writer, c *topology.Cluster, s *occupancy.Snapshot, p defrag.Plan, svg string, width int) error {
	before, after, err := planPictures(c, s, p)
	if err != nil {
		return fmt.Errorf("defrag: picturing the plan: %w", err)
	}
	in := map[string]bool{}
	dom := &c.Domains[p.Domain]
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		in[c.Nodes[n].Name] = true
	}
	o := picture.TextOptions{Width: width, NoLegend: true}
	joint := picture.View{Rows: append(before.Rows, after.Rows...)}
	fmt.Fprintf(w, "\n%s\n", joint.Legend())
	for _, v := range []picture.View{before.Only(in), after.Only(in)} {
		fmt.Fprintf(w, "%s, %s %s:\n", v.Title, dom.Tier, dom.Name)
		v.WriteText(w, o)
	}
	return writeFile(svg, func(out io.Writer) error {
		return picture.WritePairSVG(out, fmt.Sprintf("defragmentation plan in %s %s: before and after", dom.Tier, dom.Name), before, after)
	})
}
