package quota

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// three accounts on a 128-GPU cluster: a and b lend, c does not; 16 GPUs
// are in no share.
var three = Shares{{Account: "a", GPUs: 48, Lend: true}, {Account: "b", GPUs: 32, Lend: true}, {Account: "c", GPUs: 32, Cap: 48}}

func TestCompute(t *testing.T) {
	tests := []struct {
		name string
		jobs []Job
		want Ledger
	}{
		{
			name: "quiet cluster: every idle share of a lender is in the pool",
			// pool = a's 48 + b's 32 + 16 in no share; c does not lend
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 96, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Lending: true}, {Account: "b", Guaranteed: 32, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "b borrows while a is quiet",
			// b holds 32 own + 40 borrowed (72); a idle, lends 48; 16 free in no share:
			// pool 48 + 16 = 64; 40 borrowed: 16 from no share, 24 from a
			jobs: []Job{{Account: "b", GPUs: 32, Running: true}, {Account: "b", GPUs: 40, Running: true, Borrowing: true}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 64, Borrowed: 40, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Lending: true, Lent: 24},
				{Account: "b", Guaranteed: 32, InUse: 72, Borrowed: 40, Preemptible: 40, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48, Lent: 0}}},
		},
		{
			name: "a lender with waiting jobs stops lending what they ask for",
			// a waits for 8: it keeps 8 of its idle 48 and lends 40: pool
			// 40 + 16 in no share = 56; of the 40 borrowed, 16 sit in no
			// share, 24 in a's idle share
			jobs: []Job{{Account: "b", GPUs: 72, Running: true, Borrowing: true}, {Account: "a", GPUs: 8}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 56, Borrowed: 40, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Waiting: 8, Lent: 24, Lending: true},
				{Account: "b", Guaranteed: 32, InUse: 72, Borrowed: 40, Preemptible: 72, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "a lender whose waiting jobs want all its idle share lends nothing",
			// a runs 24 and waits for 16 + 8: it keeps its idle 24; the
			// pool is the 16 in no share and b's idle 32
			jobs: []Job{{Account: "a", GPUs: 24, Running: true}, {Account: "a", GPUs: 16}, {Account: "a", GPUs: 8}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 48, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, InUse: 24, Waiting: 24},
				{Account: "b", Guaranteed: 32, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "a lender keeps back what fits its idle share, smallest first",
			// a runs 24 and waits for 24 + 8: of its idle 24 the 8 fits
			// first, then the 24 no longer does (16 left): it keeps 8 and
			// lends 16: pool 16 + b's 32 + 16 in no share = 64
			jobs: []Job{{Account: "a", GPUs: 24, Running: true}, {Account: "a", GPUs: 24}, {Account: "a", GPUs: 8}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 64, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, InUse: 24, Waiting: 32, Lending: true},
				{Account: "b", Guaranteed: 32, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "a lender keeps back only as many jobs of one size as fit",
			// a runs 24 and waits for three 16s: of its idle 24 one 16
			// fits (24/16 = 1), the other two cannot use it alone: it keeps
			// 16 and lends 8: pool 8 + b's 32 + 16 in no share = 56
			jobs: []Job{{Account: "a", GPUs: 24, Running: true}, {Account: "a", GPUs: 16}, {Account: "a", GPUs: 16}, {Account: "a", GPUs: 16}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 56, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, InUse: 24, Waiting: 48, Lending: true},
				{Account: "b", Guaranteed: 32, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "teams waiting only for jobs larger than their shares still lend",
			// an idle cluster; a waits for 64 (> 48), b for 40 (> 32):
			// neither job can ever fit its own share, so neither team
			// keeps anything back: pool 48 + 32 + 16 = 96 and both may
			// borrow (were each to keep its idle share for its job, both
			// would wait for ever)
			jobs: []Job{{Account: "a", GPUs: 64}, {Account: "b", GPUs: 40}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 96, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Waiting: 64, Lending: true},
				{Account: "b", Guaranteed: 32, Waiting: 40, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
		{
			name: "jobs outside the shares take the GPUs in no share first",
			// 10 of the 16 unassigned are held: 6 left to lend beyond a's and b's 80
			jobs: []Job{{Account: "other", GPUs: 10, Running: true}},
			want: Ledger{GPUs: 128, Unassigned: 16, Outside: 10, Pool: 86, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Lending: true}, {Account: "b", Guaranteed: 32, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(three, 128, tt.jobs, nil, 0)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Usage{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntitledAndBorrow(t *testing.T) {
	jobs := []Job{{Account: "a", GPUs: 40, Running: true}, {Account: "b", GPUs: 32, Running: true},
		{Account: "c", GPUs: 40, Running: true, Borrowing: true}}
	// pool: a lends 8, b 0, 16 in no share = 24; c borrows 8 of it
	l := Compute(three, 128, jobs, map[string]float64{"a": 4}, 0.5)
	tests := []struct {
		name    string
		got     bool
		want    bool
		because string
	}{
		{"a 6 entitled", l.Entitled("a", 6), true, "40 + 0.5 x 4 + 6 = 48"},
		{"a 7 not", l.Entitled("a", 7), false, "40 + 2 + 7 = 49 > 48"},
		{"b 1 not", l.Entitled("b", 1), false, "b is at its share"},
		{"unknown account", l.Entitled("zz", 1), false, "no share"},
		{"b borrows 14", l.MayBorrow("b", 14), true, "pool: a's idle 48-42 = 6 + 16 = 22; 8 borrowed: 14 left"},
		{"b not 15", l.MayBorrow("b", 15), false, "8 + 15 = 23 > 22"},
		{"c capped", l.MayBorrow("c", 9), false, "c holds 40, cap 48"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v (%s)", tt.name, tt.got, tt.want, tt.because)
		}
	}
	if l.Pool != 22 || l.Excess("c") != 8 || l.Excess("a") != 0 {
		t.Errorf("pool %d (want 22), excess c %d (want 8), a %d (want 0)", l.Pool, l.Excess("c"), l.Excess("a"))
	}
}

func TestStartStop(t *testing.T) {
	l := Compute(three, 128, []Job{{Account: "a", GPUs: 40}}, nil, 0)
	// a waits for 40: it keeps 40 of its idle 48; pool 8 + b's 32 + 16
	if l.Pool != 56 {
		t.Fatalf("pool %d, want 56", l.Pool)
	}
	l.Start("a", 40, false)
	// a's job runs: a lends its 8 idle: 8 + 32 + 16, the same
	if l.Pool != 56 || l.Accounts[0].InUse != 40 || l.Accounts[0].Waiting != 0 {
		t.Fatalf("after start: pool %d (want 56), %+v", l.Pool, l.Accounts[0])
	}
	l.Stop("a", 40, false, false)
	// it ended: all 48 lent: 48 + 32 + 16
	if l.Pool != 96 || l.Accounts[0].InUse != 0 {
		t.Fatalf("after end: pool %d (want 96), %+v", l.Pool, l.Accounts[0])
	}
	l.Start("a", 40, false)
	l.Stop("a", 40, false, true)
	// requeued: it waits again, a keeps 40 back
	if l.Pool != 56 || l.Accounts[0].Waiting != 40 {
		t.Fatalf("after requeue: pool %d (want 56), %+v", l.Pool, l.Accounts[0])
	}
}

// TestKeep: what a lender keeps back of its idle share for its waiting
// jobs (by size: count).
func TestKeep(t *testing.T) {
	tests := []struct {
		name    string
		idle    float64
		waiting map[int]int
		want    float64
	}{
		{"nothing waits", 24, nil, 0},
		{"no idle share", 0, map[int]int{8: 1}, 0},
		// 8 fits: 8; then 16 left, 24 does not fit
		{"smallest first", 24, map[int]int{8: 1, 24: 1}, 8},
		// 20 / 8 = 2 of the three fit: 16, not 24 (more than the idle 20)
		{"only as many of one size as fit", 20, map[int]int{8: 3}, 16},
		// 16 fits 16 exactly
		{"a job the size of the idle share", 16, map[int]int{16: 1}, 16},
		// 8 + 8 = 16 of 16, then nothing is left for the 4
		{"filled by the smaller", 16, map[int]int{4: 0, 8: 2, 16: 1}, 16},
		// floor(15.5) = 15: one 8 fits, the second does not (7 left)
		{"a fractional idle share (charge)", 15.5, map[int]int{8: 2}, 8},
		// 4 + 4 + 8 = 16 of 18; the 16 does not fit the 2 left
		{"mixed sizes", 18, map[int]int{4: 2, 8: 1, 16: 1}, 16},
	}
	for _, tt := range tests {
		if got := keep(tt.idle, tt.waiting); got != tt.want {
			t.Errorf("%s: keep(%v, %v) = %v, want %v", tt.name, tt.idle, tt.waiting, got, tt.want)
		}
	}
}

// Queue counts a submitted job as waiting, as Compute does for a waiting
// job: the ledger made from the counts and the one kept event by event
// agree.
func TestQueueAgreesWithCompute(t *testing.T) {
	l := Compute(three, 128, nil, nil, 0)
	l.Queue("a", 40)
	l.Queue("nobody", 8) // no share: nothing to count
	want := Compute(three, 128, []Job{{Account: "a", GPUs: 40}}, nil, 0)
	if l.Pool != want.Pool || l.Accounts[0].Waiting != 40 || l.Outside != 0 {
		t.Fatalf("after Queue: pool %d (want %d), %+v, outside %d", l.Pool, want.Pool, l.Accounts[0], l.Outside)
	}
	l.Start("nobody", 8, false) // outside the shares
	if l.Outside != 8 {
		t.Errorf("outside %d, want 8", l.Outside)
	}
}

// A job beyond its share takes what is left of its account's share first
// and borrows the rest (issue 26): c lends nothing, so its remainder is in
// no pool, and before it had to borrow the whole job.
func TestMayBorrowUsesTheRemainder(t *testing.T) {
	// a and b at their shares, c at 24 of 32 (8 left), 12 of the 16 GPUs
	// in no share held by jobs in no share: the pool is 4
	l := Compute(three, 128, []Job{{Account: "a", GPUs: 48, Running: true}, {Account: "b", GPUs: 32, Running: true},
		{Account: "c", GPUs: 24, Running: true}, {Account: "zz", GPUs: 12, Running: true}}, nil, 0)
	tests := []struct {
		name    string
		account string
		gpus    int
		want    bool
	}{
		{"c's 12: 8 its own, 4 borrowed", "c", 12, true}, // 4 <= pool 4
		{"c's 13: 5 borrowed", "c", 13, false},           // 5 > 4
		{"a at its share borrows all 4", "a", 4, true},   // 4 <= 4
		{"a at its share, 5 is too many", "a", 5, false}, // 5 > 4
		{"c's cap still holds", "c", 25, false},          // 24 + 25 > cap 48
	}
	if l.Pool != 4 || l.Remainder("c") != 8 || l.Remainder("a") != 0 {
		t.Fatalf("pool %d (want 4), remainder c %d (want 8), a %d (want 0)", l.Pool, l.Remainder("c"), l.Remainder("a"))
	}
	for _, tt := range tests {
		if got := l.MayBorrow(tt.account, tt.gpus); got != tt.want {
			t.Errorf("%s: MayBorrow = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	// a runs 40 of its 48; the jobs below, one after another:
	l := Compute(three, 128, []Job{{Account: "a", GPUs: 40, Running: true}}, nil, 0)
	got, own := l.AdmitOwn([]Job{
		{Account: "a", GPUs: 8},  // 40 + 8 = 48: within
		{Account: "a", GPUs: 8},  // 56 > 48; pool b's 32 + 16 in no share = 48: borrows
		{Account: "b", GPUs: 32}, // within b's 32 (the pool drops to 16)
		// 40 > c's 32, but 32 of it sit in c's own idle share (c lends
		// none of it): it borrows only 8; 8 + 8 borrowed <= 16 (before
		// issue 26 it had to borrow all 40 and waited)
		{Account: "c", GPUs: 40},
		{Account: "zz", GPUs: 1}, // no share: waits
		// beyond b's share (32 + 8 > 32), and it may not be requeued: it
		// does not borrow
		{Account: "b", GPUs: 8, NoRequeue: true},
		{Account: "b", GPUs: 8}, // 16 borrowed + 8 > 16: waits
		// beyond c's share now, and it may not be requeued
		{Account: "c", GPUs: 8, NoRequeue: true},
		{Account: "zz", GPUs: 1, NoRequeue: true},       // no share: waits
		{Account: "b", GPUs: 8, OverBorrowBound: true},  // beyond b's share: does not borrow
		{Account: "zz", GPUs: 1, OverBorrowBound: true}, // no share: waits
	})
	want := []Admission{Within, Borrows, Within, Borrows, Waits, CannotBorrow, Waits, CannotBorrow, Waits, CannotBorrow, Waits}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// a's second job finds a's share full (own 0); c's takes c's 32
	if diff := cmp.Diff([]int{0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0}, own); diff != "" {
		t.Errorf("own parts (-want +got):\n%s", diff)
	}
	if l.Accounts[0].InUse != 40 || l.Accounts[0].Waiting != 0 {
		t.Errorf("Admit changed the ledger: %+v", l.Accounts[0])
	}
}

// MayBorrow's count without a copy agrees with starting the job on a copy
// of the ledger, over a grid of ledgers (lenders with and without waiting
// jobs, a charge, GPUs held outside the shares).
func TestMayBorrowAgreesWithStart(t *testing.T) {
	ref := func(l Ledger, account string, gpus int) bool {
		u := l.find(account)
		if u == nil || u.Cap > 0 && u.InUse+gpus > u.Cap {
			return false
		}
		l.Accounts = slices.Clone(l.Accounts)
		l.Start(account, gpus, true)
		return l.Borrowed <= l.Pool
	}
	n := 0
	for _, a := range []int{0, 20, 48, 60} {
		for _, c := range []int{0, 24, 32, 40} {
			for _, waitA := range []int{0, 4, 30} {
				for _, out := range []int{0, 12} {
					jobs := []Job{{Account: "a", GPUs: a, Running: a > 0}, {Account: "b", GPUs: 30, Running: true},
						{Account: "c", GPUs: c, Running: c > 0}, {Account: "zz", GPUs: out, Running: out > 0}}
					if waitA > 0 {
						jobs = append(jobs, Job{Account: "a", GPUs: waitA})
					}
					l := Compute(three, 128, jobs, map[string]float64{"b": 1}, 0.5)
					for _, acct := range []string{"a", "b", "c"} {
						for g := 1; g <= 64; g++ {
							if l.Entitled(acct, g) {
								continue
							}
							n++
							if got, want := l.MayBorrow(acct, g), ref(l, acct, g); got != want {
								t.Fatalf("a %d c %d a waits %d outside %d: MayBorrow(%s, %d) = %v, counted on a copy %v", a, c, waitA, out, acct, g, got, want)
							}
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no case")
	}
}

func TestOverBorrowBound(t *testing.T) {
	tests := []struct {
		name  string
		max   float64
		gpus  int
		limit time.Duration
		want  bool
	}{
		{"no bound", 0, 64, 0, false},
		{"within", 256, 8, 31 * time.Hour, false},
		{"at the bound", 256, 8, 32 * time.Hour, false},
		{"over", 256, 64, 8 * time.Hour, true},
		{"no time limit", 256, 1, 0, true},
		{"a minute over", 256, 8, 32*time.Hour + time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OverBorrowBound(tt.max, tt.gpus, tt.limit); got != tt.want {
				t.Errorf("OverBorrowBound(%v, %d, %v) = %v, want %v", tt.max, tt.gpus, tt.limit, got, tt.want)
			}
		})
	}
}
