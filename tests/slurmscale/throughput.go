package slurmscale

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// throughput submits cfg.Held held jobs with the plugins and as many
// without, in four alternating batches (on, off, off, on: machine noise
// hits both modes alike), on the empty cluster. Held jobs never start, so
// only the submission path is measured: sbatch, the RPC, job_submit and
// the job record. For each batch: the wall time, sdiag's
// REQUEST_SUBMIT_BATCH_JOB (counters reset before it), slurmctld's CPU
// time; with the plugins, the plugin's own time per call as it logged it
// inside slurmctld ("took Nus, engine Nus") and the decision line every
// job carries: a run whose calls never reached the engine does not pass
// as fast (Verdicts).
func (s *scaleLab) throughput(ctx context.Context) (ThroughputFigures, error) {
	f := ThroughputFigures{Jobs: s.cfg.Held}
	var tooks, engine []float64
	var cpuOn, cpuOff time.Duration
	f.VerdictsOn, f.VerdictsOff = Verdicts{Untouched: map[string]int{}}, Verdicts{Untouched: map[string]int{}}
	for _, on := range []bool{true, false, false, true} {
		if err := s.setPlugins(ctx, on); err != nil {
			return f, err
		}
		b, err := s.heldBatch(ctx, s.cfg.Held/2, on)
		if err != nil {
			return f, err
		}
		if on {
			f.WallOnS += b.wall.Seconds()
			f.SubmitOn, cpuOn = f.SubmitOn.Add(b.rpc), cpuOn+b.cpu
			tooks, engine = append(tooks, b.took...), append(engine, b.engine...)
			f.VerdictsOn = f.VerdictsOn.add(b.verdicts)
		} else {
			f.WallOffS += b.wall.Seconds()
			f.SubmitOff, cpuOff = f.SubmitOff.Add(b.rpc), cpuOff+b.cpu
			f.VerdictsOff = f.VerdictsOff.add(b.verdicts)
		}
	}
	if f.WallOnS > 0 {
		f.Ratio = f.WallOffS / f.WallOnS // jobs/s with over without: the same jobs each
	}
	per := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(max(n, 1)) }
	f.CtldCPUOnMs, f.CtldCPUOffMs = per(cpuOn, f.SubmitOn.Count), per(cpuOff, f.SubmitOff.Count)
	f.Calls, f.Load = len(tooks), loadAvg()
	f.TookP50, f.TookP99, f.TookMax = quantile(tooks, 0.5), quantile(tooks, 0.99), quantile(tooks, 1)
	f.EngineP50, f.EngineP99 = quantile(engine, 0.5), quantile(engine, 0.99)
	s.log("slurmscale: throughput: ratio %.3f, plugin p99 %.0f µs over %d calls, verdicts with the plugins: %d by the engine, %d untouched %v, %d none",
		f.Ratio, f.TookP99, f.Calls, f.VerdictsOn.Engine, f.VerdictsOn.UntouchedTotal(), f.VerdictsOn.Untouched, f.VerdictsOn.None)
	return f, s.setPlugins(ctx, true)
}

// heldOutcome is one batch of held jobs.
type heldOutcome struct {
	wall, cpu    time.Duration
	rpc          RPC
	took, engine []float64
	verdicts     Verdicts
}

func (s *scaleLab) heldBatch(ctx context.Context, n int, on bool) (heldOutcome, error) {
	var o heldOutcome
	logPath := s.lab.Path("log", "slurmctld.log")
	offset := size(logPath)
	if _, err := s.sdiag(ctx, true); err != nil {
		return o, err
	}
	cpu0 := readCPU(s.lab.CtldPID)
	jobs, wall, err := submitAll(ctx, s.lab, s.work.held(n))
	if err != nil {
		return o, err
	}
	o.wall, o.cpu = wall, cpuSum(readCPU(s.lab.CtldPID))-cpuSum(cpu0)
	d, err := s.sdiag(ctx, false)
	if err != nil {
		return o, err
	}
	o.rpc = d.ByType["REQUEST_SUBMIT_BATCH_JOB"]
	if on {
		o.took, o.engine = tookSince(logPath, offset)
	}
	q, err := s.queue(ctx)
	if err != nil {
		return o, err
	}
	o.verdicts = countVerdicts(q, idSet(jobs))
	return o, cancel(ctx, s.lab, ids(jobs))
}

func cpuSum(c cpuTimes) time.Duration { return c.own }

func idSet(jobs []submitted) map[string]bool {
	m := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		m[j.ID] = true
	}
	return m
}

// add sums two counts of verdicts.
func (v Verdicts) add(o Verdicts) Verdicts {
	v.Engine += o.Engine
	v.Refused += o.Refused
	v.None += o.None
	for k, n := range o.Untouched {
		v.Untouched[k] += n
	}
	return v
}

var tookRe = regexp.MustCompile(`job_submit/gangtopo: job .*\(took (\d+)us, engine (\d+)us\)`)

// tookSince reads the plugin's per-call times (µs) logged after offset.
func tookSince(path string, offset int64) (took, engine []float64) {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return nil, nil
	}
	for _, line := range strings.Split(string(data[offset:]), "\n") {
		if m := tookRe.FindStringSubmatch(line); m != nil {
			t, _ := strconv.ParseFloat(m[1], 64)
			e, _ := strconv.ParseFloat(m[2], 64)
			took, engine = append(took, t), append(engine, e)
		}
	}
	return took, engine
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

// checkVerdicts says what is wrong with a throughput phase's decisions:
// with the plugins every job carries the engine's decision, without them
// none does.
func (f ThroughputFigures) checkVerdicts() error {
	var bad []string
	if f.VerdictsOn.Engine != f.SubmitOn.Count || f.EngineP50 == 0 && f.EngineP99 == 0 {
		bad = append(bad, fmt.Sprintf("with the plugins %d of %d jobs were decided by the engine (untouched %v, refused %d, no decision %d; engine p99 %.0f µs)",
			f.VerdictsOn.Engine, f.SubmitOn.Count, f.VerdictsOn.Untouched, f.VerdictsOn.Refused, f.VerdictsOn.None, f.EngineP99))
	}
	if f.VerdictsOff.None != f.SubmitOff.Count {
		bad = append(bad, fmt.Sprintf("without the plugins %d of %d jobs carry no decision", f.VerdictsOff.None, f.SubmitOff.Count))
	}
	if len(bad) > 0 {
		return fmt.Errorf("slurmscale: throughput verdicts: %s", strings.Join(bad, "; "))
	}
	return nil
}
