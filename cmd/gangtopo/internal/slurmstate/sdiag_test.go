package slurmstate

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sdiag's text on two series: the reset time and the "by message type"
// section, nothing of the other sections (the "by user" one has the same
// layout and must not be read into ByType).
func TestParseSdiagSeries(t *testing.T) {
	for _, tc := range []struct {
		release string
		since   int64
		want    map[string]RPCCount // a few of the types
		types   int
	}{
		{"22.05.8", 1796593987, map[string]RPCCount{
			"REQUEST_NODE_INFO":      {Count: 59, TotalUs: 45715},
			"REQUEST_PARTITION_INFO": {Count: 52, TotalUs: 25281},
			"REQUEST_KILL_JOB":       {Count: 25, TotalUs: 1413255},
		}, 16},
		{"26.05.5", 1796594007, map[string]RPCCount{
			"REQUEST_NODE_INFO":  {Count: 24, TotalUs: 8955},
			"REQUEST_STATS_INFO": {Count: 15, TotalUs: 1385},
			"REQUEST_JOB_INFO":   {Count: 7, TotalUs: 1512},
		}, 10},
	} {
		t.Run(tc.release, func(t *testing.T) {
			out, err := os.ReadFile("testdata/slurm-" + tc.release + "/sdiag.txt")
			if err != nil {
				t.Fatal(err)
			}
			st, err := ParseSdiag(out, "sdiag")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Since.Equal(time.Unix(tc.since, 0)) {
				t.Errorf("Since %v, want %v", st.Since, time.Unix(tc.since, 0))
			}
			if len(st.ByType) != tc.types {
				t.Errorf("%d message types, want %d: %v", len(st.ByType), tc.types, st.ByType)
			}
			if _, ok := st.ByType["root"]; ok {
				t.Error("the section by user was read as a message type")
			}
			for typ, want := range tc.want {
				if got := st.ByType[typ]; got != want {
					t.Errorf("%s: %+v, want %+v", typ, got, want)
				}
			}
		})
	}
}

// What is not sdiag's output, or not a layout it knows, is refused with
// the line that is wrong.
func TestParseSdiagRefuses(t *testing.T) {
	const head = "Data since      Sun Dec 06 21:53:07 2026 (1796593987)\n"
	for _, tc := range []struct{ name, out, want string }{
		{"empty", "", `no "Data since" line`},
		{"no section", head + "Jobs submitted: 3\n", `no section "Remote Procedure Call statistics by message type"`},
		{"no reset time", "Remote Procedure Call statistics by message type\n", `no "Data since" line`},
		{"odd line", head + "Remote Procedure Call statistics by message type\n\tREQUEST_PING ( 1008) count:x ave_time:1 total_time:2\n",
			`line 3: "\tREQUEST_PING ( 1008) count:x ave_time:1 total_time:2": want "TYPE (number) count:N ave_time:N total_time:N"`},
		{"out of range", head + "Remote Procedure Call statistics by message type\n\tREQUEST_PING ( 1008) count:99999999999999999999 ave_time:1 total_time:2\n",
			"line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSdiag([]byte(tc.out), "sdiag")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sdiag") {
				t.Errorf("error %v, want one naming sdiag with %q", err, tc.want)
			}
		})
	}
}

// Sub is what was served between two readings; a reset in between
// (another Since, or a counter that went down) gives no difference.
func TestRPCStatsSub(t *testing.T) {
	t0 := time.Unix(1796593987, 0)
	a := &RPCStats{Since: t0, ByType: map[string]RPCCount{"REQUEST_NODE_INFO": {10, 1000}, "REQUEST_PING": {5, 50}}}
	b := &RPCStats{Since: t0, ByType: map[string]RPCCount{"REQUEST_NODE_INFO": {14, 1800}, "REQUEST_PING": {5, 50}, "REQUEST_JOB_INFO": {2, 300}}}
	got, ok := b.Sub(a)
	want := map[string]RPCCount{"REQUEST_NODE_INFO": {4, 800}, "REQUEST_JOB_INFO": {2, 300}}
	if !ok || !cmp.Equal(got, want) {
		t.Errorf("b - a = %v, %v; want %v", got, ok, want)
	}
	if _, ok := b.Sub(nil); ok {
		t.Error("a difference from no reading")
	}
	reset := &RPCStats{Since: t0.Add(time.Minute), ByType: b.ByType}
	if _, ok := reset.Sub(a); ok {
		t.Error("a difference across a reset (Since changed)")
	}
	down := &RPCStats{Since: t0, ByType: map[string]RPCCount{"REQUEST_NODE_INFO": {3, 200}}}
	if _, ok := down.Sub(a); ok {
		t.Error("a difference across a counter that went down")
	}
}
