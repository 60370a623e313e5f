package main

import (
	"strings"
	"testing"
	"time"
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
