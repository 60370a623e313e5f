package picture

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// A policy keeps its colour whatever the order of -p (simulate's plot
// coloured by position: gangtopo changed colour when -p listed it
// second); variants keep their base's colour and are dashed.
func TestColor(t *testing.T) {
	if Color("gangtopo") == Color("slurm") || Color("gangtopo") == Color("FGD") {
		t.Errorf("gangtopo %s, slurm %s, FGD %s: want three colours", Color("gangtopo"), Color("slurm"), Color("FGD"))
	}
	if Color("FGD") != Color("fgd") || Color("gangtopo+defrag") != Color("gangtopo") {
		t.Errorf("FGD %s fgd %s; gangtopo+defrag %s gangtopo %s: want the same", Color("FGD"), Color("fgd"), Color("gangtopo+defrag"), Color("gangtopo"))
	}
	if Color("someday") != Color("someday") || Dash("gangtopo") != "" || Dash("gangtopo+defrag") == "" {
		t.Errorf("unknown names keep their colour; only variants are dashed")
	}
}

// The y axis spans the data: curves at 4.1-5.2% are drawn on 3.8-5.4, not
// on 0-25 where a point of difference is a pixel.
func TestYAxis(t *testing.T) {
	tests := []struct {
		name           string
		lo, hi         float64
		wantLo, wantHi float64
		wantStep       float64
	}{
		// spread 1.1: margin 0.11 -> 3.99..5.31; a fifth is 0.264, the
		// nearest round step 0.2 -> 3.8..5.4
		{"close curves", 4.1, 5.2, 3.8, 5.4, 0.2},
		// 0.2..21.8 starts within its spread of zero: 0..21.8, a fifth 4.36,
		// step 5
		{"near zero", 2, 20, 0, 25, 5},
		// waits from 12 to 95 minutes: margin 8.3 -> 3.7..103.3, from
		// zero, a fifth 20.7, step 20
		{"waits", 12, 95, 0, 120, 20},
		// one value: a band of 1 around it, margins 0.1 -> 6.4..7.6, a
		// fifth 0.24, step 0.2
		{"one value", 7, 7, 6.4, 7.6, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, step := YAxis(tt.lo, tt.hi)
			if diff := cmp.Diff([]float64{tt.wantLo, tt.wantHi, tt.wantStep}, []float64{lo, hi, step},
				cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
				t.Errorf("YAxis(%g, %g) (-want +got):\n%s", tt.lo, tt.hi, diff)
			}
		})
	}
}

// Rows follow the cluster's domains: an NVL72 rack is a row of its own
// under its leaf (they ran together under the leaf before), the spine is
// named where there are several.
func TestFromClusterRows(t *testing.T) {
	var names []string
	for _, r := range FromCluster(topotest.NVL72(4), occupancy.New(topotest.NVL72(4))).Rows {
		names = append(names, r.Name+" "+strings.Repeat("n", len(r.Nodes)/18))
	}
	want := []string{"leaf1 / rack01 n", "leaf1 / rack02 n", "leaf2 / rack03 n", "leaf2 / rack04 n"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("NVL72 rows (-want +got):\n%s", diff)
	}
	var fat []string
	for _, r := range FromCluster(topotest.Lab16(), occupancy.New(topotest.Lab16())).Rows {
		fat = append(fat, r.Name)
	}
	if diff := cmp.Diff([]string{"spine1 / leaf1", "spine1 / leaf2", "spine2 / leaf3", "spine2 / leaf4"}, fat); diff != "" {
		t.Errorf("Lab16 rows (-want +got):\n%s", diff)
	}
}

// A large cluster is a line per leaf, one glyph per node; a plan's marks
// show in it.
func TestWriteTextPerNode(t *testing.T) {
	c := topotest.FatTree(1, 2, 40, topotest.DGXH100) // 80 nodes > PerGPUNodes
	s := occupancy.New(c)
	take := func(name string, gpus ...int) occupancy.Allocation {
		id, _ := c.NodeByName(name)
		a := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}
		if err := s.Allocate(a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	take(c.Nodes[0].Name, 0, 1, 2, 3, 4, 5, 6, 7) // full: #
	take(c.Nodes[1].Name, 0, 1, 2)                // 5 free: 5
	victim := take(c.Nodes[2].Name, 0)            // requeued: o
	v := FromCluster(c, s)
	v.Mark(c, victim, Requeued)
	var b bytes.Buffer
	v.WriteText(&b, TextOptions{Width: 100})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want the legend and one per leaf:\n%s", len(lines), b.String())
	}
	if want := "leaf01  #5o" + strings.Repeat(".", 37); lines[1] != want {
		t.Errorf("leaf line\n%q\nwant\n%q", lines[1], want)
	}
	if !strings.Contains(lines[0], "o requeued by the plan") || !strings.Contains(lines[0], "one glyph per node") {
		t.Errorf("legend %q", lines[0])
	}
}

// The SVG pictures and charts are well-formed XML.
func TestSVGIsXML(t *testing.T) {
	c := topotest.GB200Lab(2, 4)
	v := FromCluster(c, occupancy.New(c))
	after := v
	after.Title = "after"
	var pair, chart bytes.Buffer
	if err := WritePairSVG(&pair, "plan <x>", v, after); err != nil {
		t.Fatal(err)
	}
	ch := Chart{Title: "a & b", Series: []Series{{Name: "gangtopo", X: []float64{1, 2}, Y: []float64{3, 4}}}}
	if err := Panels(&chart, "t", []Chart{ch}, 2); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*bytes.Buffer{"pair": &pair, "chart": &chart} {
		dec := xml.NewDecoder(b)
		for {
			_, err := dec.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: %v", name, err)
				}
				break
			}
		}
	}
}

var _ = topology.TierLeaf

// A band is a polygon along Hi and back along Lo, split where a point has
// no band (NaN); the y axis covers it.
func TestBand(t *testing.T) {
	nan := math.NaN()
	c := Chart{Title: "t", Series: []Series{{Name: "gangtopo", X: []float64{1, 2, 3, 4}, Y: []float64{5, 6, 7, 8},
		Lo: []float64{4, 5, nan, 7}, Hi: []float64{6, 70, nan, 9}}}}
	var b bytes.Buffer
	if err := Panels(&b, "band", []Chart{c}, 1); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// points 1-2 make one polygon (4 corners), point 4 alone another (2)
	if n := strings.Count(out, `<polygon class="band"`); n != 2 {
		t.Errorf("%d band polygons, want 2:\n%s", n, out)
	}
	// the axis reaches the band's 70, not only the line's 8
	if !strings.Contains(out, ">80</text>") {
		t.Errorf("no tick at 80 (the band's high is 70):\n%s", out)
	}
}
