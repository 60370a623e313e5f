package sweep

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/sim/fgd"
)

// Config says what to run.
type Config struct {
	TraceDir  string
	Workloads []string // openb pod lists, e.g. "default"
	Policies  []string // registered sim policies
	Seeds     []int64
	Tune      float64
	Workers   int // 0: one per CPU
	// RefuseShare, if not 0, makes every policy refuse the single-GPU pods
	// asking for exactly this share (fgd.Refusing): a what-if.
	RefuseShare int
	// Progress, if set, is called after every finished run (from one
	// goroutine at a time).
	Progress func(done, total int)
}

// Run is one finished simulation.
type Run struct {
	*fgd.Result
	Wall time.Duration
}

// Sweep is the outcome of Execute.
type Sweep struct {
	Config Config
	Runs   map[Key][]Run // by workload and policy, in seed order
	Wall   time.Duration // whole sweep
	CPU    time.Duration // user+system CPU of the process during the sweep
	Load   time.Duration // reading and preparing the traces
	// LoadAvg is the machine's 1-minute load average before and after
	// (Linux /proc/loadavg; empty elsewhere): other work competes for the
	// cores.
	LoadAvg [2]string
}

// Key names one cell: a workload and a policy.
type Key struct{ Workload, Policy string }

type task struct {
	w      *fgd.Workload
	policy string
	f      fgd.Factory
	seed   int64
	index  int
}

// Execute loads the workloads and runs every (workload, policy, seed) on
// cfg.Workers goroutines. Runs are independent (each has its own snapshot,
// random stream and policy), so the results do not depend on the number
// of workers.
func Execute(cfg Config) (*Sweep, error) {
	factories := make([]fgd.Factory, len(cfg.Policies))
	for i, p := range cfg.Policies {
		f, err := fgd.Lookup(p)
		if err != nil {
			return nil, err
		}
		if cfg.RefuseShare != 0 {
			f = fgd.Refusing(f, cfg.RefuseShare)
		}
		factories[i] = f
	}
	start, cpu0, load0 := time.Now(), cpuTime(), loadAvg()
	workloads, err := load(cfg.TraceDir, cfg.Workloads)
	if err != nil {
		return nil, err
	}
	sw := &Sweep{Config: cfg, Runs: map[Key][]Run{}, Load: time.Since(start)}
	var tasks []task
	for _, w := range workloads {
		for pi, p := range cfg.Policies {
			sw.Runs[Key{w.Name, p}] = make([]Run, len(cfg.Seeds))
			for si, seed := range cfg.Seeds {
				tasks = append(tasks, task{w, p, factories[pi], seed, si})
			}
		}
	}
	if err := sw.execute(tasks, cfg); err != nil {
		return nil, err
	}
	sw.Wall, sw.CPU = time.Since(start), cpuTime()-cpu0
	sw.LoadAvg = [2]string{load0, loadAvg()}
	return sw, nil
}

func (sw *Sweep) execute(tasks []task, cfg Config) error {
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ch := make(chan task)
	var mu sync.Mutex
	var firstErr error
	done := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				t0 := time.Now()
				r, err := fgd.Run(t.w, t.f, t.seed, cfg.Tune)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s, %s, seed %d: %w", t.w.Name, t.policy, t.seed, err)
				}
				if err == nil {
					sw.Runs[Key{t.w.Name, t.policy}][t.index] = Run{r, time.Since(t0)}
				}
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, len(tasks))
				}
				mu.Unlock()
			}
		}()
	}
	for _, t := range tasks {
		ch <- t
	}
	close(ch)
	wg.Wait()
	return firstErr
}

// load reads the cluster once and every workload, in parallel.
func load(dir string, names []string) ([]*fgd.Workload, error) {
	c, models, err := traces.OpenbCluster(dir)
	if err != nil {
		return nil, err
	}
	out := make([]*fgd.Workload, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = traces.OpenbWorkload(dir, name, c, models)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadAvg returns the 1-minute load average, or "" if unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// OneRunTimes times one run of each policy on the default workload with
// seed 42, on one goroutine: the best wall time of repeats runs.
func OneRunTimes(dir string, policies []string, tune float64, repeats int) (map[string]time.Duration, error) {
	ws, err := load(dir, []string{"default"})
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for _, p := range policies {
		f, err := fgd.Lookup(p)
		if err != nil {
			return nil, err
		}
		for range repeats {
			t0 := time.Now()
			if _, err := fgd.Run(ws[0], f, 42, tune); err != nil {
				return nil, err
			}
			if d, ok := out[p]; !ok || time.Since(t0) < d {
				out[p] = time.Since(t0)
			}
		}
	}
	return out, nil
}
