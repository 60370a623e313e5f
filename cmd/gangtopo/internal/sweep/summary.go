package sweep

import (
	"math"
	"path/filepath"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/sim/fgd"
)

// Stat is a mean and sample standard deviation over seeds.
type Stat struct {
	Mean, SD float64
	N        int
}

func stat(xs []float64) Stat {
	s := Stat{N: len(xs)}
	if s.N == 0 {
		return Stat{Mean: math.NaN(), SD: math.NaN()}
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(s.N)
	for _, x := range xs {
		s.SD += (x - s.Mean) * (x - s.Mean)
	}
	if s.N > 1 {
		s.SD = math.Sqrt(s.SD / float64(s.N-1))
	} else {
		s.SD = 0
	}
	return s
}

// Points are the arrived-workload percentages the tables report.
var Points = [2]int{100, 130}

// Metrics are one cell's figures at Points, over seeds.
type Metrics struct {
	Unalloc    [2]Stat // unallocated GPU %
	FragAmount [2]Stat // fragmented GPU, % of all GPUs
	FragRatio  [2]Stat // fragmented GPU, % of idle GPUs
}

// Cell is one workload and policy.
type Cell struct {
	Key
	Ours Metrics
	// Curve is the mean unallocated GPU % at each arrived % (NaN where a
	// seed has no point).
	Curve [fgd.MaxArrived + 1]float64
	// Published is the FGD authors' figures for the same workload, policy
	// and seeds, if they published any.
	Published *Metrics
	// RunTime is the mean wall time of one run.
	RunTime time.Duration
}

// Summary aggregates a sweep, in the order of its workloads and policies.
// pub may be nil. A what-if sweep (Config.RefuseShare) is not the
// published protocol, so its cells get no published results.
func Summary(sw *Sweep, pub []traces.Published3) []Cell {
	if sw.Config.RefuseShare != 0 {
		pub = nil
	}
	var cells []Cell
	for _, wl := range sw.Config.Workloads {
		for _, p := range sw.Config.Policies {
			runs := sw.Runs[Key{wl, p}]
			c := Cell{Key: Key{wl, p}, Ours: metrics(runs)}
			seeds := map[int64]bool{}
			var wall time.Duration
			for _, r := range runs {
				seeds[r.Seed] = true
				wall += r.Wall
			}
			c.RunTime = wall / time.Duration(max(len(runs), 1))
			c.Curve = meanCurve(runs)
			c.Published = published(pub, wl, p, seeds)
			cells = append(cells, c)
		}
	}
	return cells
}

func metrics(runs []Run) Metrics {
	var m Metrics
	for i, k := range Points {
		var u, a, r []float64
		for _, run := range runs {
			u = append(u, run.Curve.Unallocated(k))
			a = append(a, run.Curve.FragAmount[k])
			r = append(r, run.Curve.FragRatio[k])
		}
		m.Unalloc[i], m.FragAmount[i], m.FragRatio[i] = stat(u), stat(a), stat(r)
	}
	return m
}

func meanCurve(runs []Run) [fgd.MaxArrived + 1]float64 {
	var c [fgd.MaxArrived + 1]float64
	for k := range c {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, r.Curve.Unallocated(k))
		}
		c[k] = stat(xs).Mean
	}
	return c
}

// published computes the FGD authors' figures over the seeds this sweep
// ran (all their seeds if none overlap), or nil if they have none.
func published(pub []traces.Published3, wl, policy string, seeds map[int64]bool) *Metrics {
	var rows []traces.Published3
	for _, p := range pub {
		if p.Workload == wl && p.Policy == policy && seeds[p.Seed] {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		for _, p := range pub {
			if p.Workload == wl && p.Policy == policy {
				rows = append(rows, p)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	var m Metrics
	for i, k := range Points {
		var u, a, r []float64
		for _, p := range rows {
			u = append(u, 100-p.Alloc[k])
			a = append(a, p.FragAmount[k])
			r = append(r, p.FragRatio[k])
		}
		m.Unalloc[i], m.FragAmount[i], m.FragRatio[i] = stat(u), stat(a), stat(r)
	}
	return &m
}

// LoadPublished reads the FGD authors' results from the trace directory;
// it returns nil, nil when they are not there.
func LoadPublished(traceDir string) ([]traces.Published3, error) {
	return traces.ReadPublished3(filepath.Join(traceDir, traces.FGDExpected))
}
