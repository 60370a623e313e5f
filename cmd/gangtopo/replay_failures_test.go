package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestNodeFailuresFlag(t *testing.T) {
	tests := []struct {
		rate   string
		repair time.Duration
		want   float64
		err    string
	}{
		{rate: "", want: 0},
		{rate: "none", want: 0},
		// 419 / (2,048 x 54 x 24) = 1.5786e-4
		{rate: "llama3", repair: time.Hour, want: 419.0 / 2654208},
		{rate: "0.001", repair: time.Hour, want: 0.001},
		{rate: "-1", repair: time.Hour, err: `--node-failures "-1": want llama3`},
		{rate: "often", repair: time.Hour, err: `--node-failures "often": want llama3`},
		{rate: "0.001", repair: 0, err: "--repair 0s: want a duration above 0"},
	}
	for _, tt := range tests {
		got, err := failureFlags{rate: tt.rate, repair: tt.repair}.perNodeHour()
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.rate, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%q: %v, %v; want %v", tt.rate, got, err, tt.want)
		}
	}
}

func TestRequeueFlag(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
		err  string
	}{{"", false, ""}, {"delay", false, ""}, {"expedite", true, ""}, {"fast", false, `--requeue "fast": want delay`}} {
		got, err := failureFlags{requeue: tt.in}.expedite()
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("--requeue %q: %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFailureTargets(t *testing.T) {
	rows := []failureRow{
		{policy: "gangtopo", restarted: 9, wider: 3},
		{policy: "gangtopo-slurm", restarted: 6, p95: 2, mean: 2, wider: 0},
		{policy: sparesPolicy, restarted: 20, prompt: 95},
		{policy: "slurm", restarted: 18, p95: 129.7, mean: 32.8, wider: 1},
	}
	got := failureTargets(rows)
	want := [][]string{
		{"target", "policy", "measured", "wanted", ""},
		{"gangs restarted wider than they ran", "gangtopo-slurm", "0 (slurm 1)", "<= slurm", "met"},
		{"restart wait p95 / mean", "gangtopo-slurm", "2.0 / 2.0 min (slurm 129.7 / 32.8)", "<= slurm", "met"},
		{"gangs restarted in their original tier within 126 s", sparesPolicy, "95.0%", ">= 95%", "met"},
	}
	if strings.Join(flatten(got), "|") != strings.Join(flatten(want), "|") {
		t.Fatalf("targets\n%q\nwant\n%q", got, want)
	}
	rows[1].p95, rows[2].prompt = 130, 94.9
	got = failureTargets(rows)
	if got[2][4] != "MISSED" || got[3][4] != "MISSED" {
		t.Errorf("a longer p95 and 94.9%% within 126 s: %q; want both missed", got)
	}
	// without slurm's row, or restarts, nothing to compare
	if got := failureTargets(rows[:2]); len(got) != 1 {
		t.Errorf("no slurm row: %q", got)
	}
}

func flatten(t [][]string) []string {
	var out []string
	for _, r := range t {
		out = append(out, r...)
	}
	return out
}

// --restart-at-once needs failures, and a requeue with a delay to
// shorten.
func TestRestartAtOnceFlag(t *testing.T) {
	for _, tt := range []struct {
		f   failureFlags
		err string
	}{
		{failureFlags{atOnce: true}, "--restart-at-once: needs --node-failures"},
		{failureFlags{rate: "llama3", repair: time.Hour, requeue: "expedite", atOnce: true}, "--restart-at-once with --requeue expedite"},
	} {
		err := tt.f.drawFailures(&replaySetup{})
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%+v: %v, want %q", tt.f, err, tt.err)
		}
	}
}

// failureRows counts why the restarted gangs missed their tier within
// promptRestart, and how those on whole nodes and on partly used ones
// fared; jobs of at most gangAbove GPUs and gangs never restarted are not
// counted.
func TestFailureRowsWhyMissed(t *testing.T) {
	res := &queue.Result{Jobs: []queue.Job{{GPUs: 16}, {GPUs: 16}, {GPUs: 16}, {GPUs: 16}, {GPUs: 4}, {GPUs: 16}}}
	leaf := topology.TierLeaf
	res.Restarts = []queue.Restart{
		{Job: 0, At: 0, Start: 5, Old: leaf, New: leaf},                              // whole, in time
		{Job: 1, At: 0, Start: 5, Old: leaf, New: leaf, Spread: true},                // spread, in time
		{Job: 2, At: 0, Start: 900, Old: leaf, New: leaf, Spread: true, Short: true}, // spread, short, late
		{Job: 3, At: 0, Start: 5, Old: leaf, New: topology.TierSpine},                // whole, wider
		{Job: 4, At: 0, Start: 900, Old: leaf, New: leaf, Spread: true},              // not a gang
		{Job: 5, At: 0, Start: math.NaN(), Old: leaf, Spread: true},                  // never restarted
	}
	r := failureRows([]string{sparesPolicy}, []*queue.Result{res}, 8)[0]
	got := []int{r.gangs, r.restarted, r.missed, r.missedSpread, r.missedShort, r.whole, r.wholePrompt, r.spread, r.spreadPrompt}
	want := []int{5, 4, 2, 1, 1, 2, 1, 2, 1}
	if !slices.Equal(got, want) {
		t.Errorf("gangs, restarted, missed, missed spread, missed short, whole, whole in time, spread, spread in time = %v; want %v", got, want)
	}
	if got := ofPercent(r.wholePrompt, r.whole); got != "1 of 2 (50.0%)" {
		t.Errorf("ofPercent %q", got)
	}
	if got := ofPercent(0, 0); got != "-" {
		t.Errorf("ofPercent of none %q", got)
	}
}
