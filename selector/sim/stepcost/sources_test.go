package stepcost

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

var docPath = flag.String("doc", "", "write the demand and placement tables into this Markdown file's slowdown-model section")

// h100 is the reference GPU of the tables: an H100 SXM's peak dense
// BF16 rate (topology.DefaultSpeeds).
const h100 = 989

// demandRows is the demand table: every class and band, per parallelism,
// with the share of the step the collective takes at the job's best on a
// DGX H100 cluster (tensor and expert inside one server: NVLink 450 GB/s;
// data over whole servers: 8 x 50 = 400; a pipeline's stage boundary: one
// NIC, 50), for a 16-GPU job (8 for llm-tp).
func demandRows() [][]string {
	t := [][]string{{"class", "band", "published model", "split (16 GPUs; llm-tp 8)", "parallelism", "demand GB/s per TFLOP/s", "on an H100: GB/s", "best bandwidth GB/s", "share of the step at its best"}}
	best := [NumParallelisms]float64{Data: 400, Tensor: 450, Pipeline: 50, Expert: 450}
	for i := range Classes {
		c := &Classes[i]
		g := 16
		if c.MaxGPUs > 0 && c.MaxGPUs < g {
			g = c.MaxGPUs
		}
		s := splitFor(c, g)
		for b := Low; b < NumBands; b++ {
			d := demands(c, b, s)
			total := 0.0
			for p := range d {
				total += d[p] * h100 / best[p]
			}
			for p := range d {
				if d[p] == 0 {
					continue
				}
				r := d[p] * h100 / best[p]
				t = append(t, []string{c.Name, b.String(), c.Band[b].Name, fmt.Sprintf("TP %d, PP %d, DP %d, EP %d", s.TP, s.PP, s.DP, s.EP),
					Parallelism(p).String(), fmt.Sprintf("%.5f", d[p]), fmt.Sprintf("%.2f", d[p]*h100), fmt.Sprintf("%g", best[p]),
					fmt.Sprintf("%.1f%%", 100*r/(1+total))})
			}
		}
	}
	return t
}

// placement is a named allocation on the fabric fixture.
type placement struct {
	name  string
	alloc occupancy.Allocation
}

// placementRows is the slowdown of each class where it is placed, on
// fabric (2 spines x 2 leaves x 4 DGX H100, 2:1 oversubscribed leaves
// and spines), each cell "central [low..high]".
func placementRows(t *testing.T) [][]string {
	c := fabric(t)
	bands := [NumBands]*Model{New(c, Low), New(c, Central), New(c, High)}
	rows := [][]string{{"placement", "dp-cnn", "llm-tp", "llm-3d", "moe"}}
	cell := func(name string, a occupancy.Allocation) string {
		cl := class(name)
		if !cl.fits(a.NumGPUs()) {
			return "-"
		}
		var f [NumBands]float64
		for b := range bands {
			f[b] = bands[b].costOf(cl, a).Factor
		}
		return fmt.Sprintf("%.3f [%.3f..%.3f]", f[Central], f[Low], f[High])
	}
	for _, p := range []placement{
		{"8 GPUs: one server", on(8, 1)},
		{"8 GPUs: 4 + 4 in one leaf", on(4, 1, 2)},
		{"8 GPUs: 4 + 4 over two leaves of a spine", on(4, 1, 5)},
		{"8 GPUs: 4 + 4 over two spines", on(4, 1, 9)},
		{"8 GPUs: one on each of 8 servers, both spines", on(1, 1, 2, 5, 6, 9, 10, 13, 14)},
		{"16 GPUs: two whole servers of one leaf", on(8, 1, 2)},
		{"16 GPUs: two whole servers over two spines", on(8, 1, 9)},
		{"16 GPUs: 4 on each of 4 servers of one leaf", on(4, 1, 2, 3, 4)},
		{"16 GPUs: 2 on each of 8 servers, both spines", on(2, 1, 2, 5, 6, 9, 10, 13, 14)},
	} {
		row := []string{p.name}
		for _, name := range rows[0][1:] {
			row = append(row, cell(name, p.alloc))
		}
		rows = append(rows, row)
	}
	return rows
}

func markdown(t [][]string) string {
	var b strings.Builder
	for i, row := range t {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(row)) + "\n")
		}
	}
	return b.String()
}

// The physics the model must show: a tensor slice leaving its NVLink
// server and gangs crossing oversubscribed spines cost the most; a
// pipeline barely notices a spine. With -doc the tables are written into
// docs/replay.md:
//
//	go test ./selector/sim/stepcost -run TestSourcesTable -count=1 -args -doc $PWD/docs/replay.md
func TestSourcesTable(t *testing.T) {
	c := fabric(t)
	m := New(c, Central)
	f := func(name string, a occupancy.Allocation) float64 { return m.costOf(class(name), a).Factor }
	checks := []struct {
		what string
		ok   bool
	}{
		{"a tensor slice costs more the further it leaves its server",
			1 < f("llm-tp", on(4, 1, 2)) && f("llm-tp", on(4, 1, 2)) < f("llm-tp", on(4, 1, 5)) && f("llm-tp", on(4, 1, 5)) < f("llm-tp", on(4, 1, 9))},
		{"a tensor slice out of its server costs more than data parallelism the same way",
			f("llm-tp", on(4, 1, 9)) > f("dp-cnn", on(4, 1, 9))},
		{"whole servers over oversubscribed spines cost data parallelism",
			f("dp-cnn", on(8, 1, 9)) > 1.2},
		{"pipeline stages over spines cost under 1%", f("llm-3d", on(8, 1, 9)) < 1.01},
	}
	for _, ck := range checks {
		if !ck.ok {
			t.Errorf("%s: not so", ck.what)
		}
	}
	if *docPath == "" {
		return
	}
	var b strings.Builder
	b.WriteString("Written by\n\n    go test ./selector/sim/stepcost -run TestSourcesTable -count=1 -args -doc $PWD/docs/replay.md\n\n")
	b.WriteString("Demands, from the sources below, and the share of the step each collective takes at the job's best on DGX H100:\n\n")
	b.WriteString(markdown(demandRows()))
	b.WriteString("\nThe slowdown where a job is placed, against its best, on 2 spines x 2 leaves x 4 DGX H100 with leaves and spines\n")
	b.WriteString("oversubscribed 2:1 (a job's ranks on its GPUs in allocation order; central [low..high]; - where the class is not drawn for the size):\n\n")
	b.WriteString(markdown(placementRows(t)))
	if err := docsection.Replace(*docPath, "slowdown-model", b.String()); err != nil {
		t.Fatal(err)
	}
}
