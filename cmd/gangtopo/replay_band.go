package main

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/sim/stepcost"
)

// The slowdown model of a replay, and its band.
//
// --slowdown grounded (the default) charges each placement with the
// grounded model (selector/sim/stepcost) and replays every (load, policy)
// three times, at the low, central and high end of the published figures;
// every figure of the report is then the central one with the band after
// it: "12.3 [10.1..15.2]". grounded:BAND replays one band. factors (the
// fixed factors per tier of earlier releases), factors:KEY=VALUE,... (or
// KEY=VALUE,... alone) and none replay once.

// replaySlowdown is --slowdown, parsed.
type replaySlowdown struct {
	factors queue.Slowdown
	bands   []stepcost.Band // nil: the fixed factors
}

const replaySlowdownHelp = "grounded (the default: the grounded model at its low, central and high band), grounded:low|central|high, factors, factors:KEY=F,... or KEY=F,... (fixed factors over their defaults: nvlink, node, block, leaf, spine, any, spread), or none"

// parseReplaySlowdown reads --slowdown.
func parseReplaySlowdown(v string) (replaySlowdown, error) {
	v = strings.TrimSpace(v)
	if band, ok := strings.CutPrefix(v, "grounded"); ok {
		if band == "" {
			return replaySlowdown{bands: []stepcost.Band{stepcost.Low, stepcost.Central, stepcost.High}}, nil
		}
		b, err := stepcost.ParseBand(strings.TrimPrefix(band, ":"))
		if err != nil || !strings.HasPrefix(band, ":") {
			return replaySlowdown{}, usagef("--slowdown %q: want %s", v, replaySlowdownHelp)
		}
		return replaySlowdown{bands: []stepcost.Band{b}}, nil
	}
	spec := v
	if rest, ok := strings.CutPrefix(v, "factors"); ok {
		spec = strings.TrimPrefix(rest, ":")
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return replaySlowdown{}, usagef("--slowdown %q: want %s", v, replaySlowdownHelp)
		}
	}
	if spec == "default" || v == "" {
		return replaySlowdown{}, usagef("--slowdown %q: want %s", v, replaySlowdownHelp)
	}
	sd, err := queue.ParseSlowdown(spec)
	if err != nil {
		return replaySlowdown{}, usagef("--slowdown: %v (want %s)", err, replaySlowdownHelp)
	}
	return replaySlowdown{factors: sd}, nil
}

// describe is the model in the report's header.
func (s replaySlowdown) describe() string {
	if s.bands == nil {
		return "slowdown " + s.factors.String()
	}
	if len(s.bands) == 1 {
		return fmt.Sprintf("slowdown grounded in each job's collectives and the cluster's link speeds (docs/replay.md), %s band", s.bands[0])
	}
	return "slowdown grounded in each job's collectives and the cluster's link speeds (docs/replay.md), every figure at the central band with the low and high bands after it: central [low..high]"
}

// config is the replay configuration of band i (the fixed factors when
// the model has no bands).
func (s replaySlowdown) config(cfg queue.Config, i int) queue.Config {
	if s.bands == nil {
		cfg.Slowdown, cfg.Grounded = s.factors, nil
		return cfg
	}
	cfg.Grounded = &queue.Grounded{Band: s.bands[i]}
	return cfg
}

// count is how many times each (load, policy) is replayed.
func (s replaySlowdown) count() int { return max(1, len(s.bands)) }

// central is the index of the band the report's figures are at.
func (s replaySlowdown) central() int {
	for i, b := range s.bands {
		if b == stepcost.Central {
			return i
		}
	}
	return 0
}

// mergeBands merges one table per band (same shape, in the replay's band
// order: low, central, high) into one: a cell the same in every band as
// it is, another as "central [low..high]".
func mergeBands(tables [][][]string, central int) [][]string {
	if len(tables) == 1 || tables[central] == nil {
		return tables[central]
	}
	out := make([][]string, len(tables[central]))
	for r, row := range tables[central] {
		out[r] = make([]string, len(row))
		for c, cell := range row {
			lo, hi := tables[0][r][c], tables[len(tables)-1][r][c]
			if lo == cell && hi == cell {
				out[r][c] = cell
			} else {
				out[r][c] = cell + " [" + lo + ".." + hi + "]"
			}
		}
	}
	return out
}
