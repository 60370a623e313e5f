package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

// throughput submits n held jobs with the plugins and n without, in
// alternating batches (so machine noise hits both modes alike), 8 sbatch
// processes at a time, and compares the submission rates. Held jobs
// (-H) never start, so only the submission path is measured: sbatch, the
// RPC, job_submit and the job record. The plugin's own time per call is
// what it logged inside slurmctld ("took Nus").
func (b *bench) throughput(n int, doc, label string) error {
	if err := b.publish(); err != nil {
		return err
	}
	const rounds, workers = 5, 8
	rng := rand.New(rand.NewPCG(7, 7))
	var with, without time.Duration
	var cpuWith, cpuWithout cpuUse
	var tooks []timing
	for r := 0; r < rounds; r++ {
		for _, on := range []bool{r%2 == 0, r%2 != 0} {
			if err := b.setPlugins(on); err != nil {
				return err
			}
			offset := logSize(b.lab.Path("log", "slurmctld.log"))
			cpu0 := readCPU(b.lab.CtldPID)
			d, err := b.submitBatch(n/rounds, workers, rng)
			if err != nil {
				return err
			}
			cpu := readCPU(b.lab.CtldPID).sub(cpu0)
			if on {
				with, cpuWith = with+d, cpuWith.add(cpu)
				tooks = append(tooks, tookSince(b.lab.Path("log", "slurmctld.log"), offset)...)
			} else {
				without, cpuWithout = without+d, cpuWithout.add(cpu)
			}
			if _, err := b.lab.Run(context.Background(), 30*time.Second, "scancel", "-u", "root", "-t", "PENDING"); err != nil {
				return err
			}
		}
	}
	if err := b.setPlugins(true); err != nil {
		return err
	}
	fmt.Print(throughputReport(n, workers, with, without, cpuWith, cpuWithout, tooks))
	r := runOf(n, label, with, without, cpuWith, cpuWithout, tooks)
	r.Slurm, r.Load = b.lab.Release.String(), loadAvg()
	return recordRun(doc, r)
}

// runOf is the run's row of the runs file.
func runOf(n int, label string, with, without time.Duration, cpuWith, cpuWithout cpuUse, calls []timing) runRecord {
	var tooks, engine []float64
	for _, c := range calls {
		tooks, engine = append(tooks, c.took), append(engine, c.engine)
	}
	perJob := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	return runRecord{Date: time.Now().Format("2006-01-02"), Label: label, CtldEnv: strings.Join(extraEnv, " "), Jobs: n,
		WallStockS: without.Seconds(), WallWithS: with.Seconds(), Ratio: without.Seconds() / with.Seconds(),
		CtldStockMs: perJob(cpuWithout.ctld), CtldWithMs: perJob(cpuWith.ctld),
		MachineStockMs: perJob(cpuWithout.machine), MachineWithMs: perJob(cpuWith.machine),
		Calls: len(tooks), TookP50: quantile(tooks, 0.5), TookP99: quantile(tooks, 0.99), TookMax: quantile(tooks, 1),
		EngineP50: quantile(engine, 0.5), EngineP99: quantile(engine, 0.99)}
}

// submitBatch submits count held jobs from the Philly GPU mix with
// `workers` concurrent sbatch processes and returns the wall time.
func (b *bench) submitBatch(count, workers int, rng *rand.Rand) (time.Duration, error) {
	sizes, weights := []int{1, 2, 4, 8, 16, 32}, []float64{0.859, 0.020, 0.021, 0.086, 0.0104, 0.0035}
	args := make(chan []string, count)
	for i := 0; i < count; i++ {
		x, g := rng.Float64(), 1
		for j, w := range weights {
			if x < w {
				g = sizes[j]
				break
			}
			x -= w
		}
		args <- []string{"-H", "-o", "/dev/null", "--gpus=" + strconv.Itoa(g), "--cpus-per-gpu=1", "--wrap", "true"}
	}
	close(args)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	t0 := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range args {
				if _, err := b.lab.Submit(context.Background(), nil, a...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	return d, <-errs
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

var tookRe = regexp.MustCompile(`job_submit/gangtopo: job .*\(took (\d+)us, engine (\d+)us\)`)

// timing is one logged call: its whole time and the engine's, in µs.
type timing struct{ took, engine float64 }

// tookSince reads the plugin's per-call times logged after offset.
func tookSince(path string, offset int64) []timing {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return nil
	}
	var out []timing
	for _, line := range strings.Split(string(data[offset:]), "\n") {
		if m := tookRe.FindStringSubmatch(line); m != nil {
			took, _ := strconv.ParseFloat(m[1], 64)
			engine, _ := strconv.ParseFloat(m[2], 64)
			out = append(out, timing{took, engine})
		}
	}
	return out
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

func throughputReport(n, workers int, with, without time.Duration, cpuWith, cpuWithout cpuUse, calls []timing) string {
	var tooks, engine []float64
	for _, c := range calls {
		tooks, engine = append(tooks, c.took), append(engine, c.engine)
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	ratio := rate(with) / rate(without)
	verdict := "met"
	if ratio < 0.9 {
		verdict = "MISSED"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This run: %d held jobs, %d with the gangtopo plugins and %d without, %d sbatch processes at a time.\n\n", 2*n, n, n, workers)
	fmt.Fprintf(&b, "| | jobs | wall time | jobs/s |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| stock Slurm | %d | %.1f s | %.1f |\n", n, without.Seconds(), rate(without))
	fmt.Fprintf(&b, "| with gangtopo | %d | %.1f s | %.1f |\n\n", n, with.Seconds(), rate(with))
	fmt.Fprintf(&b, "Throughput ratio with/without: **%.3f** (target at least 0.9: %s).\n\n", ratio, verdict)
	perJob := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	fmt.Fprintf(&b, "CPU time per submission (user+system, while the batches ran): slurmctld %.2f ms stock, %.2f ms with gangtopo; "+
		"the whole machine (slurmctld, sbatch, munged, the 16 slurmd) %.2f ms stock, %.2f ms with gangtopo.\n\n",
		perJob(cpuWithout.ctld), perJob(cpuWith.ctld), perJob(cpuWithout.machine), perJob(cpuWith.machine))
	fmt.Fprintf(&b, "The plugin's time per call inside slurmctld, as it logged it (`took Nus`, ctld.Gate.Submit from the job to the "+
		"rewrite, engine included; the pipe hand-offs are not in it), over %d calls on the 16-node snapshot: p50 %.0f µs, p99 %.0f µs, max %.0f µs; "+
		"the engine's own share: p50 %.0f µs, p99 %.0f µs. "+
		"For a 1,000-node snapshot see the section above (target p99 under 2 ms). %s\n", len(tooks),
		quantile(tooks, 0.5), quantile(tooks, 0.99), quantile(tooks, 1), quantile(engine, 0.5), quantile(engine, 0.99), loadNote())
	return b.String()
}

// loadNote says how busy the machine was: figures on a shared 2-core
// machine move with it.
func loadNote() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return fmt.Sprintf("Load average during the run (1/5/15 min): %s %s %s on %d CPUs.", f[0], f[1], f[2], runtime.NumCPU())
}

// loadAvg is the machine's 1-minute load average at the end of a run
// (0 when unreadable), kept with the run.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

// writeSection prints a section and writes it into the document.
func writeSection(path, name, body string) error {
	fmt.Print(body)
	return docsection.Replace(path, name, body)
}
