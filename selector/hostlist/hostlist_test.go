package hostlist

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{"single", "node01", []string{"node01"}},
		{"range keeps padding", "node[08-10]", []string{"node08", "node09", "node10"}},
		{"list and range", "n[1,3-4]", []string{"n1", "n3", "n4"}},
		{"two terms", "a[1-2],b", []string{"a1", "a2", "b"}},
		{"two groups", "r[1-2]g[0-1]", []string{"r1g0", "r1g1", "r2g0", "r2g1"}},
		{"suffix", "gpu[1-2]-ib", []string{"gpu1-ib", "gpu2-ib"}},
		// a comma inside brackets separates numbers, not names: split at
		// every comma, "node[03,16]" would read as "node[03" and "16]"
		{"comma inside brackets", "node[03,16]", []string{"node03", "node16"}},
		{"bracket list then a plain name", "n[1-3,7],m5", []string{"n1", "n2", "n3", "n7", "m5"}},
		{"nested prefixes", "rack[1-2]-gpu[01,03]", []string{"rack1-gpu01", "rack1-gpu03", "rack2-gpu01", "rack2-gpu03"}},
		{"three groups", "s[1]l[2,4]n[9-10]", []string{"s1l2n9", "s1l2n10", "s1l4n9", "s1l4n10"}},
		{"terms around a bracket list", "a,b[08,10-11],c", []string{"a", "b08", "b10", "b11", "c"}},
		{"padding wider than the number", "n[0001-0002]", []string{"n0001", "n0002"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expand(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct{ expr, wantSub string }{
		{"", "empty expression"},
		{"node[1-", "missing ']'"},
		{"node]1", "unmatched ']'"},
		{"n[[1]]", "nested"},
		{"n[3-1]", "greater than"},
		{"n[a-b]", "bad range"},
		{"n[]", "empty range"},
		{"a,,b", "empty name"},
		{"n[1-99999999]", "more than"},
		{"bad name", "bad character"},
	}
	for _, tc := range tests {
		_, err := Expand(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.wantSub) {
			t.Errorf("Expand(%q) error = %v, want it to contain %q", tc.expr, err, tc.wantSub)
		}
	}
}

func TestCompressRoundTrip(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"node01", "node02", "node03", "node05"}, "node[01-03,05]"},
		{[]string{"node05"}, "node05"},
		{[]string{"b1", "a2", "a1", "login"}, "a[1-2],b1,login"},
		{[]string{"n9", "n10"}, "n9,n10"},
	}
	for _, tc := range tests {
		got := Compress(tc.names)
		if got != tc.want {
			t.Errorf("Compress(%v) = %q, want %q", tc.names, got, tc.want)
		}
		back, err := Expand(got)
		if err != nil {
			t.Fatalf("Expand(Compress) = %v", err)
		}
		if len(back) != len(tc.names) {
			t.Errorf("round trip of %v gave %v", tc.names, back)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"node[01-16]", "a[1,3-5]b[0-1],c", "x[", "n[5-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := Expand(expr)
		if err != nil {
			return
		}
		if len(names) == 0 || len(names) > MaxHosts {
			t.Fatalf("Expand(%q) returned %d names", expr, len(names))
		}
		// Whatever expands must survive a compress/expand round trip as a set.
		back, err := Expand(Compress(names))
		if err != nil {
			t.Fatalf("Expand(Compress(%q)): %v", expr, err)
		}
		seen := map[string]bool{}
		for _, n := range back {
			seen[n] = true
		}
		for _, n := range names {
			if !seen[n] {
				t.Fatalf("%q lost in round trip of %q", n, expr)
			}
		}
	})
}

// TestExpandAtMost checks that the bound holds across groups, terms and
// products of groups, and that it is checked before the names are built.
func TestExpandAtMost(t *testing.T) {
	tests := []struct {
		expr    string
		limit   int
		wantLen int // 0: an error naming the bound
	}{
		{"n[1-4]", 4, 4},
		{"n[1-5]", 4, 0},
		{"n[1-2,3-4]", 4, 4},
		{"n[1-3,4-5]", 4, 0},   // the second part crosses the bound
		{"a,b,c,d,e", 4, 0},    // plain names count too
		{"r[1-2]n[1-2]", 4, 4}, // 2 x 2
		{"r[1-2]n[1-3]", 4, 0}, // 2 x 3
		{"a,n[1-3]", 4, 4},     // the bound spans terms
		{"a,n[1-4]", 4, 0},     //
		{"n[0-999999," + strings.Repeat("0-999999,", 200) + "0]", 1 << 16, 0},
	}
	for _, tc := range tests {
		names, err := ExpandAtMost(tc.expr, tc.limit)
		if tc.wantLen == 0 {
			want := fmt.Sprintf("names more than %d hosts", tc.limit)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ExpandAtMost(%.30q, %d) = %d names, %v; want an error containing %q",
					tc.expr, tc.limit, len(names), err, want)
			}
			continue
		}
		if err != nil || len(names) != tc.wantLen {
			t.Errorf("ExpandAtMost(%q, %d) = %d names, %v; want %d", tc.expr, tc.limit, len(names), err, tc.wantLen)
		}
	}
}

// FuzzExpandAtMost checks the bound holds for any expression and bound, and
// that within the bound ExpandAtMost agrees with Expand.
func FuzzExpandAtMost(f *testing.F) {
	f.Add("node[01-16]", 8)
	f.Add("a[1,3-5]b[0-1],c", 7)
	f.Add("r[1-9]n[1-9],x", 81)
	f.Fuzz(func(t *testing.T, expr string, limit int) {
		limit %= 1000 // a small positive bound: 1..1000
		if limit < 0 {
			limit = -limit
		}
		limit++
		names, err := ExpandAtMost(expr, limit)
		if err != nil {
			return
		}
		if len(names) > limit {
			t.Fatalf("ExpandAtMost(%q, %d) returned %d names", expr, limit, len(names))
		}
		all, err := Expand(expr)
		if err != nil || len(all) != len(names) {
			t.Fatalf("Expand(%q) = %d names, %v; ExpandAtMost gave %d", expr, len(all), err, len(names))
		}
	})
}
