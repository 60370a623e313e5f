package main

import (
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestReplaySparesFlag(t *testing.T) {
	c := topotest.Lab16()
	tests := []struct {
		in   string
		tier topology.Tier
		n    int
		err  string
	}{
		{in: "leaf:1", tier: topology.TierLeaf, n: 1},
		{in: "leaf:2", tier: topology.TierLeaf, n: 2},
		{in: "leaf", err: `--spares "leaf": want TIER:N`},
		{in: "leaf:0", err: `--spares "leaf:0": want TIER:N`},
		{in: "rack:1", err: `--spares "rack:1": unknown tier "rack"`},
		{in: "block:1", err: `--spares "block:1": spares: tier block: want a tier of cluster lab16`},
	}
	for _, tt := range tests {
		s, err := parseReplaySpares(tt.in, c)
		switch {
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%s: error %v; want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || s.Tier != tt.tier || s.PerDomain != tt.n):
			t.Errorf("%s: %+v, %v", tt.in, s, err)
		}
	}
}
