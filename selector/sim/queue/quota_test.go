package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// quotaJobs: on the 16-node lab (128 GPUs, 4 leaves of 4 x 8 GPUs) teamb
// submits sixteen 8-GPU jobs at 0 (10,000 s each), twice its share of 64;
// teama, quiet until then, asks for a 16-GPU gang at 100 s (1,000 s).
func quotaJobs() []Job {
	var jobs []Job
	for i := range 16 {
		jobs = append(jobs, Job{Name: "b" + string(rune('a'+i)), Submit: 0, Duration: 10000, GPUs: 8, Account: "teamb"})
	}
	return append(jobs, Job{Name: "a-gang", Submit: 100, Duration: 1000, GPUs: 16, Account: "teama"})
}

var quotaShares = quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}

func replayQuota(t *testing.T, mode QuotaMode) *Result {
	t.Helper()
	c := topotest.Lab16()
	cfg := Config{Slowdown: mustSlowdown(t, "none"), Quota: &Quota{Mode: mode, Shares: quotaShares}}
	res, err := Replay(c, quotaJobs(), NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// starts lists each job's start times, in job order (NaN: never ran).
func starts(r *Result) []float64 {
	out := make([]float64, len(r.Outcomes))
	for i, o := range r.Outcomes {
		out[i] = o.Start
	}
	return out
}

func TestQuotaModes(t *testing.T) {
	const gang = 16 // index of teama's gang
	tests := []struct {
		mode QuotaMode
		// teama's gang starts at; teamb's jobs 8..15 start at
		gangAt, borrowedAt float64
		requeues           int
		violations         int
	}{
		// No quota: teamb takes the whole cluster at 0; teama waits for
		// teamb's first jobs to end at 10,000: 9,900 s, far past the
		// bound of 5 + 30 s.
		{mode: QuotaOff, gangAt: 10000, borrowedAt: 0, violations: 1},
		// Hard limits: teamb runs its 64 and no more; teama's gang starts
		// at once on the idle half; teamb's other 8 jobs wait for its own
		// first 8 to end.
		{mode: QuotaHard, gangAt: 100, borrowedAt: 10000},
		// Dynamic: teamb borrows teama's idle 64 at 0; at the first
		// controller cycle after teama asks (105) two borrowed jobs of one
		// leaf are requeued and teama's gang starts there 30 s later: a
		// wait of 35 s, the bound.
		{mode: QuotaDynamic, gangAt: 135, borrowedAt: 0, requeues: 2},
	}
	for _, tt := range tests {
		r := replayQuota(t, tt.mode)
		s := Summarize(r)
		if got := r.Outcomes[gang].Start; got != tt.gangAt {
			t.Errorf("mode %d: teama's gang started at %g, want %g", tt.mode, got, tt.gangAt)
		}
		if s.OwnerViolations != tt.violations || s.OwnerJobs != 9 {
			// owners: teamb's first 8 jobs (64 = its share) and teama's gang
			t.Errorf("mode %d: %d owner jobs, %d violations; want 9 and %d", tt.mode, s.OwnerJobs, s.OwnerViolations, tt.violations)
		}
		if len(r.Requeues) != tt.requeues || s.QuotaReclaims != min(tt.requeues, 1) {
			t.Errorf("mode %d: %d requeues, %d reclaims; want %d and %d", tt.mode, len(r.Requeues), s.QuotaReclaims, tt.requeues, min(tt.requeues, 1))
		}
		for j := 8; j < 16; j++ {
			o := r.Outcomes[j]
			first := o.Start - o.Ran
			if o.Requeues > 0 {
				first = r.Requeues[0].Start
			}
			if first != tt.borrowedAt {
				t.Errorf("mode %d: teamb job %d first started at %g, want %g", tt.mode, j, first, tt.borrowedAt)
			}
		}
	}
}

// Only borrowed jobs are taken back: teamb's first eight ran within its
// share and are never requeued; the two victims, beyond teamb's share,
// run again once teama's gang ends (1,135 s), as the pool then has room.
func TestQuotaReclaimTakesBorrowedOnly(t *testing.T) {
	r := replayQuota(t, QuotaDynamic)
	var victims []int32
	for _, q := range r.Requeues {
		victims = append(victims, q.Job)
		if q.Job < 8 {
			t.Errorf("job %d ran within teamb's share and was requeued", q.Job)
		}
		if q.At != 105 || q.Start != 0 {
			t.Errorf("job %d requeued at %g after starting at %g, want 105 and 0", q.Job, q.At, q.Start)
		}
	}
	for _, v := range victims {
		if got := r.Outcomes[v].Start; got != 1135 {
			t.Errorf("victim %d restarted at %g, want 1135 (when teama's gang ends)", v, got)
		}
	}
	// the victims freed one leaf's two nodes: the gang runs inside a leaf
	if got := r.Outcomes[16].Nodes; got != 2 {
		t.Errorf("teama's gang on %d nodes, want 2", got)
	}
	want := []float64{0, 0, 0, 0, 0, 0, 0, 0}
	if diff := cmp.Diff(want, starts(r)[:8]); diff != "" {
		t.Errorf("teamb's own jobs (-want +got):\n%s", diff)
	}
}

// A job that can never start is counted as rejected, not left waiting for
// ever: under hard limits one larger than its account's share (72 > 64);
// under dynamic quotas one larger than its share and than every share
// that lends (72 > teama's 64 when teamb does not lend). Where teamb
// lends, teama's 72-GPU job borrows at once (teama keeps nothing back for
// a job larger than its share: 56 of its own + teamb's 64 in the pool),
// and its 8-GPU job borrows beside it. The 8-GPU job runs in every case.
func TestQuotaRefusesJobsThatCanNeverStart(t *testing.T) {
	c := topotest.Lab16()
	jobs := []Job{{Name: "big", Submit: 0, Duration: 100, GPUs: 72, Account: "teama"}, {Name: "ok", Submit: 0, Duration: 100, GPUs: 8, Account: "teama"}}
	noLend := quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64}}
	for _, tt := range []struct {
		mode     QuotaMode
		shares   quota.Shares
		rejected bool
	}{
		{QuotaHard, quotaShares, true},
		{QuotaDynamic, noLend, true},
		{QuotaDynamic, quotaShares, false},
	} {
		cfg := Config{Slowdown: mustSlowdown(t, "none"), Quota: &Quota{Mode: tt.mode, Shares: tt.shares}}
		r, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcomes[0].Rejected != tt.rejected || r.Outcomes[1].Start != 0 {
			t.Errorf("mode %d: big rejected %v (want %v), ok started at %g (want 0)", tt.mode, r.Outcomes[0].Rejected, tt.rejected, r.Outcomes[1].Start)
		}
		if !tt.rejected && r.Outcomes[0].Start != 0 {
			t.Errorf("mode %d: big started at %g, want 0 (borrowing)", tt.mode, r.Outcomes[0].Start)
		}
	}
}

// Teams waiting only for jobs larger than their shares lend their idle
// shares to each other: on the idle 128-GPU lab teama and teamb (64 each)
// each ask for 72 GPUs. teama's job borrows at once (pool: both idle
// shares, 128; neither team keeps anything back for a job its idle share
// cannot hold); teamb's then finds teamb's own idle 64 in the pool but 8
// already borrowed (8 + 72 > 64) and starts when teama's ends, at 100 s.
// Were a team with waiting jobs to lend nothing, both would wait for ever
// on an idle cluster.
func TestQuotaTeamsWaitingBeyondTheirSharesLend(t *testing.T) {
	c := topotest.Lab16()
	jobs := []Job{
		{Name: "a-big", Submit: 0, Duration: 100, GPUs: 72, Account: "teama"},
		{Name: "b-big", Submit: 0, Duration: 100, GPUs: 72, Account: "teamb"},
	}
	cfg := Config{Slowdown: mustSlowdown(t, "none"), Quota: &Quota{Mode: QuotaDynamic, Shares: quotaShares}}
	r, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 100}
	if diff := cmp.Diff(want, starts(r)); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}

// lendRecorder is the engine as a policy, remembering its placements in
// order (the replay's requests carry no job name: one per shape).
type lendRecorder struct {
	*GangTopo
	at []string
}

func (p *lendRecorder) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	a, ok := p.GangTopo.Place(s, r)
	if ok {
		p.at = append(p.at, place.Describe(s.Cluster, a))
	}
	return a, ok
}

func (p *lendRecorder) PlaceLent(s *occupancy.Snapshot, r *request.Request, lent []int) (occupancy.Allocation, bool) {
	a, ok := p.GangTopo.PlaceLent(s, r, lent)
	if ok {
		p.at = append(p.at, "lent "+place.Describe(s.Cluster, a))
	}
	return a, ok
}

// A job that starts borrowing is placed by the engine's lending option
// (issue 26). On the 16-node lab, at 0: teama's 6-GPU job takes node01:0-5
// (a 2-GPU hole in leaf1), teamb's eight 8-GPU jobs fill its share of 64
// (node02-04, leaf2, node09), then teamb borrows 4 GPUs (a whole node of
// leaf3, the busiest leaf with one: node10) and 2 GPUs. Placed anywhere,
// the 2 GPUs fill node01's hole, the tightest; packed, they join the
// borrowed GPUs in leaf3.
func TestQuotaBorrowedJobsPack(t *testing.T) {
	jobs := []Job{{Name: "a6", GPUs: 6, Account: "teama", Duration: 10000}}
	for i := range 8 {
		jobs = append(jobs, Job{Name: "b8-" + string(rune('a'+i)), GPUs: 8, Account: "teamb", Duration: 10000})
	}
	jobs = append(jobs, Job{Name: "b4", GPUs: 4, Account: "teamb", Duration: 10000}, Job{Name: "b2", GPUs: 2, Account: "teamb", Duration: 10000})
	for _, tc := range []struct {
		anywhere bool
		b4, b2   string
	}{
		{anywhere: true, b4: "node10:0-3", b2: "node01:6-7"},
		{anywhere: false, b4: "lent node10:0-3", b2: "lent node10:4-5"},
	} {
		c := topotest.Lab16()
		pol := &lendRecorder{GangTopo: NewGangTopo(c, place.Options{})}
		cfg := Config{Slowdown: mustSlowdown(t, "none"), Quota: &Quota{Mode: QuotaDynamic, Shares: quotaShares, LendAnywhere: tc.anywhere}}
		if _, err := Replay(c, jobs, pol, cfg); err != nil {
			t.Fatal(err)
		}
		// a6, the eight 8-GPU jobs, b4, b2, each placed once (all start
		// at 0), after the replay's questions of the empty cluster (one
		// per size: could it ever fit)
		want := []string{"node01:0-5", "node02:0-7", "node03:0-7", "node04:0-7", "node05:0-7", "node06:0-7", "node07:0-7",
			"node08:0-7", "node09:0-7", tc.b4, tc.b2}
		got := pol.at[max(0, len(pol.at)-len(want)):]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("LendAnywhere %v (-want +got):\n%s", tc.anywhere, diff)
		}
	}
}

// Under quota.borrow_max_gpu_hours a job whose GPUs x time limit exceeds
// the bound never borrows: teamb's 8-GPU jobs of 10,000 s are 22.2 GPU-h
// each; beyond its share of 64 (the last eight) they borrow teama's idle
// GPUs at 0 under a bound of 30 GPU-h, and wait for teamb's own jobs to end
// (at 10,000 s) under 20.
func TestQuotaBorrowBound(t *testing.T) {
	c := topotest.Lab16()
	for _, tc := range []struct {
		bound float64
		want  float64 // the start of teamb's last eight jobs
	}{{0, 0}, {30, 0}, {20, 10000}} {
		cfg := Config{Slowdown: mustSlowdown(t, "none"), Quota: &Quota{Mode: QuotaDynamic, Shares: quotaShares, BorrowMaxGPUHours: tc.bound}}
		r, err := Replay(c, quotaJobs()[:16], NewGangTopo(c, place.Options{}), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := starts(r)
		for i := range 16 {
			want := 0.0
			if i >= 8 {
				want = tc.want
			}
			if got[i] != want {
				t.Errorf("bound %v GPU-h: job %d started at %v, want %v", tc.bound, i, got[i], want)
			}
		}
	}
}
