package quota

import (
	"testing"

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
			name: "a lender with waiting jobs stops lending",
			// a waits for 8: the pool keeps only the 16 in no share; the
			// other 24 borrowed sit in a's and c's idle shares, 48:32 ->
			// 14.4 and 9.6 -> 14 and 10
			jobs: []Job{{Account: "b", GPUs: 72, Running: true, Borrowing: true}, {Account: "a", GPUs: 8}},
			want: Ledger{GPUs: 128, Unassigned: 16, Pool: 16, Borrowed: 40, Accounts: []Usage{
				{Account: "a", Guaranteed: 48, Waiting: 8, Lent: 14},
				{Account: "b", Guaranteed: 32, InUse: 72, Borrowed: 40, Preemptible: 72, Lending: true},
				{Account: "c", Guaranteed: 32, Cap: 48, Lent: 10}}},
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
	l := Compute(three, 128, []Job{{Account: "a", GPUs: 8}}, nil, 0)
	// a waits: it does not lend; pool is b's 32 + 16
	if l.Pool != 48 {
		t.Fatalf("pool %d, want 48", l.Pool)
	}
	l.Start("a", 8, false)
	// a's job runs: a lends again its 40 idle: 40 + 32 + 16
	if l.Pool != 88 || l.Accounts[0].InUse != 8 || l.Accounts[0].Waiting != 0 {
		t.Fatalf("after start: pool %d (want 88), %+v", l.Pool, l.Accounts[0])
	}
	l.Stop("a", 8, false, true)
	if l.Pool != 48 || l.Accounts[0].Waiting != 8 {
		t.Fatalf("after requeue: pool %d (want 48), %+v", l.Pool, l.Accounts[0])
	}
}
