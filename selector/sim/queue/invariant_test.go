package queue

import (
	"math/rand/v2"
	"testing"

	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// randomJobs draws n jobs with Philly-like sizes on a busy schedule.
func randomJobs(seed uint64, n int) []Job {
	rng := rand.New(rand.NewPCG(seed, 7))
	sizes := []int{1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 16, 24, 32}
	jobs := make([]Job, n)
	t := 0.0
	for i := range jobs {
		t += rng.ExpFloat64() * 40
		jobs[i] = Job{Name: "r" + string(rune('a'+i%26)), Submit: t, Duration: 60 + rng.ExpFloat64()*1500, GPUs: sizes[rng.IntN(len(sizes))]}
	}
	return jobs
}

// TestEASYGuarantee checks the promise of EASY backfill with exact time
// limits: once the first blocked job's reservation is planned for T, the
// job starts no later than T, whatever is backfilled meanwhile.
func TestEASYGuarantee(t *testing.T) {
	c := topotest.Lab16() // 128 GPUs
	for seed := uint64(1); seed <= 4; seed++ {
		for _, pol := range []Policy{firstFit{}, NewGangTopo(c, place.Options{})} {
			jobs := randomJobs(seed, 400)
			g := newGangSim(c, jobs, pol, Config{}.Defaults())
			first := map[int32]float64{}
			g.onPlan = func(j int32, at float64) {
				if _, ok := first[j]; !ok {
					first[j] = at
				}
			}
			res, err := g.run()
			if err != nil {
				t.Fatal(err)
			}
			backfilled := 0
			for j, at := range first {
				if start := res.Outcomes[j].Start; start > at+1e-6 {
					t.Errorf("seed %d, %s: job %d (%d GPUs) reserved for %.1f started at %.1f", seed, pol.Name(), j, jobs[j].GPUs, at, start)
				}
			}
			for i, o := range res.Outcomes {
				if o.Start < jobs[i].Submit || o.End < o.Start {
					t.Errorf("seed %d, %s: job %d submitted %.1f ran %.1f..%.1f", seed, pol.Name(), i, jobs[i].Submit, o.Start, o.End)
				}
				if o.Backfilled {
					backfilled++
				}
			}
			if len(first) == 0 || backfilled == 0 {
				t.Errorf("seed %d, %s: %d reservations planned, %d jobs backfilled: the trace does not exercise backfill", seed, pol.Name(), len(first), backfilled)
			}
		}
	}
}
