package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// defragSuffix marks a replay policy run with the controller's
// defragmentation policy: gangtopo+defrag, gangtopo-slurm+defrag.
const defragSuffix = "+defrag"

// defragPolicies are the policies that may carry the suffix.
var defragPolicies = []string{"gangtopo", "gangtopo-slurm"}

// replayDefragInterval is how often the replay evaluates the policy. The
// controller does every cycle (5 s); gangs wait for hours when the policy
// matters, and planning every 5 s of a months-long replay would cost
// hours of CPU for the same decisions a minute later.
const replayDefragInterval = 60 * time.Second

// defragSettings are --defrag's keys over gangtopo.yaml's defaults
// (ctld.DefaultDefrag, the one place defaults live).
func parseReplayDefrag(spec string) (*queue.Defrag, error) {
	def := ctld.DefaultDefrag()
	d := &queue.Defrag{MinGPUs: def.Auto.MinGPUs, MinWait: def.Auto.MinWait.Seconds(), MaxCost: def.Auto.MaxCost,
		MaxPerCycle: def.Auto.MaxPerCycle, Interval: replayDefragInterval.Seconds(), Retry: def.Auto.Retry.Seconds(),
		MaxTries: def.Auto.MaxTries, Limits: def.Limits, Cost: def.Cost}
	if spec == "" || spec == "default" {
		return d, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, usagef("--defrag %q: want KEY=VALUE,... (%s)", spec, replayDefragKeys)
		}
		if err := setReplayDefrag(d, k, v); err != nil {
			return nil, usagef("--defrag %s: %v (keys: %s)", kv, err, replayDefragKeys)
		}
	}
	return d, nil
}

const replayDefragKeys = "min_gpus, min_wait, max_cost, max_per_cycle, interval, budget_percent, budget_window, requeue_window, max_requeues_per_hour, restart_overhead, requeue_weight"

// setReplayDefrag sets one key.
func setReplayDefrag(d *queue.Defrag, k, v string) error {
	dur := func(dst *float64) error {
		x, err := time.ParseDuration(v)
		if err != nil || x < 0 {
			return fmt.Errorf("want a duration")
		}
		*dst = x.Seconds()
		return nil
	}
	num := func(dst *float64) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Errorf("want a number >= 0")
		}
		*dst = x
		return nil
	}
	count := func(dst *int) error {
		x, err := strconv.Atoi(v)
		if err != nil || x < 1 {
			return fmt.Errorf("want a whole number >= 1")
		}
		*dst = x
		return nil
	}
	var secs float64
	switch k {
	case "min_gpus":
		return count(&d.MinGPUs)
	case "max_per_cycle":
		return count(&d.MaxPerCycle)
	case "max_requeues_per_hour":
		return count(&d.Limits.MaxPerHour)
	case "min_wait":
		return dur(&d.MinWait)
	case "interval":
		if err := dur(&d.Interval); err != nil || d.Interval == 0 {
			return fmt.Errorf("want a positive duration")
		}
		return nil
	case "max_cost":
		return num(&d.MaxCost)
	case "requeue_weight":
		return num(&d.Cost.RequeueWeight)
	case "budget_percent":
		pct := 0.0
		err := num(&pct)
		d.Limits.BudgetFraction = pct / 100
		return err
	case "budget_window", "requeue_window", "restart_overhead":
		if err := dur(&secs); err != nil {
			return err
		}
		x := time.Duration(secs * float64(time.Second))
		switch k {
		case "budget_window":
			d.Limits.BudgetWindow = x
		case "requeue_window":
			d.Limits.Window = x
		default:
			d.Cost.RestartOverhead = x
		}
		return nil
	}
	return fmt.Errorf("unknown key %q", k)
}

// describeDefrag is the policy in one line, for the report's header.
func describeDefrag(d *queue.Defrag) string {
	return fmt.Sprintf("defragmentation (+defrag): gangs of %d+ GPUs waiting %s, plans costing at most %g GPU-h, %d a cycle, evaluated every %s; at most %d requeues an hour, %.4g%% of the GPU-hours over %s lost, no job twice within %s; restart overhead %s, requeue weight %g",
		d.MinGPUs, time.Duration(d.MinWait*float64(time.Second)), d.MaxCost, d.MaxPerCycle, time.Duration(d.Interval*float64(time.Second)),
		d.Limits.MaxPerHour, 100*d.Limits.BudgetFraction, d.Limits.BudgetWindow, d.Limits.Window, d.Cost.RestartOverhead, d.Cost.RequeueWeight)
}

// Targets of issue 14: the deployed path (and the engine) with the policy
// against the same without it.
const (
	defragTargetWait32 = 0.5  // mean wait of 32+ GPU gangs, as a fraction of the same path without the policy
	defragTargetLost   = 0.02 // GPU-hours lost to requeues, as a fraction of the GPU-hours run
)

// defragTable compares each +defrag policy with its base.
func (r *replayReport) defragTable() [][]string {
	base := map[string]*queue.Summary{}
	has := false
	for i := range r.rows {
		s := &r.rows[i].s
		base[s.Policy] = s
		has = has || strings.HasSuffix(s.Policy, defragSuffix)
	}
	if !has {
		return nil
	}
	t := [][]string{{"policy", "32+ wait mean / p95 min", "vs without", "GPU util %", "GPU-h lost to requeues", "lost % of GPU-h run",
		"requeues", "requeues per job", "plans", "target: wait <= 0.5x, lost < 2%"}}
	for i := range r.rows {
		s := &r.rows[i].s
		ratio, verdict := "-", "-"
		if b, ok := base[strings.TrimSuffix(s.Policy, defragSuffix)]; ok && strings.HasSuffix(s.Policy, defragSuffix) && b.Wait32 > 0 {
			x := s.Wait32 / b.Wait32
			ratio = fmt.Sprintf("%.2fx", x)
			verdict = "met"
			if x > defragTargetWait32 || s.LostShare >= defragTargetLost {
				verdict = "MISSED"
			}
		}
		t = append(t, []string{s.Policy, replayMinutes(s.Wait32) + " / " + replayMinutes(s.P95Wait32), ratio, replayPct(s.Util),
			strconv.FormatFloat(s.LostGPUHours, 'f', 1, 64), strconv.FormatFloat(100*s.LostShare, 'f', 2, 64),
			strconv.Itoa(s.Requeues), strconv.FormatFloat(s.RequeuesPerJob, 'f', 4, 64), strconv.Itoa(s.DefragPlans), verdict})
	}
	return t
}
