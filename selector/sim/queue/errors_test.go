package queue

import (
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// brokenPolicy breaks the Policy contract in a chosen way.
type brokenPolicy struct{ how string }

func (b brokenPolicy) Name() string { return "broken-" + b.how }

func (b brokenPolicy) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	a, ok := firstFit{}.Place(s, r)
	switch b.how {
	case "short":
		a.Nodes[0].GPUs = a.Nodes[0].GPUs[:len(a.Nodes[0].GPUs)-1]
	case "busy":
		// always GPU 0 of node 0, taken or not
		return occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: 0, GPUs: []int{0}, Milli: occupancy.WholeGPU}}}, true
	case "share":
		a.Nodes[0].Milli = 500
	}
	return a, ok
}

func TestReplayErrors(t *testing.T) {
	two := topotest.FatTree(0, 1, 2, topotest.DGXH100)
	ok := []Job{{Name: "j1", Submit: 0, Duration: 10, GPUs: 2}, {Name: "j2", Submit: 0, Duration: 10, GPUs: 1}}
	ones := []Job{{Name: "j1", Submit: 0, Duration: 10, GPUs: 1}, {Name: "j2", Submit: 0, Duration: 10, GPUs: 1}}
	tests := []struct {
		name string
		jobs []Job
		pol  Policy
		cfg  Config
		want string
	}{
		{"no jobs", nil, firstFit{}, Config{}, "no jobs to replay"},
		{"unsorted", []Job{{Name: "j1", Submit: 5, Duration: 1, GPUs: 1}, {Name: "j2", Submit: 4, Duration: 1, GPUs: 1}}, firstFit{}, Config{}, "j2: submitted at 4 s, before the previous job (5 s): sort jobs by submit time"},
		{"no GPUs", []Job{{Name: "j1", Submit: 0, Duration: 1, GPUs: 0}}, firstFit{}, Config{}, "j1: 0 GPUs (want at least 1)"},
		{"negative duration", []Job{{Name: "j1", Submit: 0, Duration: -1, GPUs: 1}}, firstFit{}, Config{}, "j1: duration -1 s (want a finite number >= 0)"},
		{"bad slowdown", ok, firstFit{}, Config{Slowdown: Slowdown{Spread: 1}}, "slowdown nvlink=0: want a finite factor >= 1"},
		{"bad limit", ok, firstFit{}, Config{LimitFactor: -2}, "time limit factor -2: want a positive number"},
		{"policy gives too few GPUs", ok, brokenPolicy{"short"}, Config{}, "replay of policy broken-short: j1 asked for 2 GPUs and got 1"},
		{"policy double-books a GPU", ones, brokenPolicy{"busy"}, Config{}, "node node1: GPU 0 has 0 milli free, 1000 asked"},
		{"policy gives a share", ok, brokenPolicy{"share"}, Config{}, "j1 got a 500 milli-GPU share, not whole GPUs"},
	}
	for _, tc := range tests {
		_, err := Replay(two, tc.jobs, tc.pol, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Replay error = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReplayPods(two, []Job{{Name: "j1", Submit: 3, Duration: 1, GPUs: 1}, {Name: "j2", Submit: 1, Duration: 1, GPUs: 1}}, Config{}); err == nil || !strings.Contains(err.Error(), "sort jobs by submit time") {
		t.Errorf("ReplayPods with unsorted jobs: %v", err)
	}
}

func TestReplayRejectsWhatNeverFits(t *testing.T) {
	two := topotest.FatTree(0, 1, 2, topotest.DGXH100) // 16 GPUs
	jobs := []Job{{Name: "small", Submit: 0, Duration: 10, GPUs: 4}, {Name: "huge", Submit: 1, Duration: 10, GPUs: 32}, {Name: "after", Submit: 2, Duration: 10, GPUs: 16}}
	for _, run := range []func() (*Result, error){
		func() (*Result, error) { return Replay(two, jobs, firstFit{}, Config{}) },
		func() (*Result, error) { return ReplayPods(two, jobs, Config{}) },
	} {
		res, err := run()
		if err != nil {
			t.Fatal(err)
		}
		got := []bool{res.Outcomes[0].Rejected, res.Outcomes[1].Rejected, res.Outcomes[2].Rejected}
		if got[0] || !got[1] || got[2] {
			t.Errorf("%s: rejected = %v, want only the 32-GPU job", res.Policy, got)
		}
		if s := Summarize(res); s.Rejected != 1 || s.Jobs != 2 {
			t.Errorf("%s: summary counts %d run, %d rejected; want 2 and 1", res.Policy, s.Jobs, s.Rejected)
		}
	}
}
