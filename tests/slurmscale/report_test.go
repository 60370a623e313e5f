package slurmscale

import (
	"strings"
	"testing"
)

// TestCostRow: a plugins-on window's controller RPCs split into job
// listings, node listings, updates and the rest, each a minute and per
// RPC, and the whole a minute with its share.
func TestCostRow(t *testing.T) {
	w := Window{Plugins: true, Backlog: 20000, WindowS: 30, Sdiag: &Sdiag{ByType: map[string]RPC{
		"REQUEST_JOB_INFO":         {Count: 3, TotalUs: 300_000},
		"REQUEST_NODE_INFO":        {Count: 3, TotalUs: 30_000},
		"REQUEST_PARTITION_INFO":   {Count: 3, TotalUs: 3_000},
		"REQUEST_UPDATE_JOB":       {Count: 10, TotalUs: 200_000},
		"REQUEST_PING":             {Count: 1, TotalUs: 1_000},
		"REQUEST_SUBMIT_BATCH_JOB": {Count: 15, TotalUs: 466_000},
	}}}
	w.ControllerTypes = RPC{Count: 20, TotalUs: 534_000}
	w.ControllerRPC = w.ControllerTypes
	got := costRow(&Result{Release: "22.05.8", Nodes: 256}, w)
	want := "| 22.05.8 | 256 | 20000 | 6.0, 100.0 | 12.0, 5.5 | 20.0, 20.0 | 2.0, 1.0 | 1068 (53.40%) |\n"
	if got != want {
		t.Errorf("costRow:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(Render([]*Result{{Release: "22.05.8", Nodes: 256, Windows: []Window{w}}}), want) {
		t.Error("Render has no cost row for the plugins-on window")
	}
}
