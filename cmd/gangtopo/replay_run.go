package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/sim/deployed"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// controllerCycle is the controller daemon's default poll interval
// (seconds): how often the deployed path's pending jobs are re-bound.
const controllerCycle = 5

// replayPolicy replays one policy on one run's jobs.
func replayPolicy(name string, set *replaySetup, jobs []queue.Job, cfg queue.Config) (*queue.Result, error) {
	base, withDefrag := strings.CutSuffix(name, defragSuffix)
	if !withDefrag {
		cfg.Defrag = nil
	}
	base, mode, _ := splitQuotaSuffix(base)
	if cfg.Quota != nil {
		q := *cfg.Quota // the shares for every policy; the mode its suffix's
		q.Mode = mode
		cfg.Quota = &q
	}
	res, err := replayBase(base, set, jobs, cfg)
	if res != nil {
		res.Policy = name
	}
	return res, err
}

// replayBase replays one of the base policies.
func replayBase(name string, set *replaySetup, jobs []queue.Job, cfg queue.Config) (*queue.Result, error) {
	c := set.cluster
	switch name {
	case "gangtopo":
		return queue.Replay(c, jobs, queue.NewGangTopo(c, place.Options{}), cfg)
	case "gangtopo-slurm", sparesPolicy:
		pol := jobsubmit.DefaultPolicy()
		pol.Jobs = jobsubmit.ScopeGPU
		pol.WholeNodeGangs = set.wholeNodeGangs
		if name == sparesPolicy {
			pol.Spares = set.spares
		}
		q, err := deployed.NewQueue(c, deployed.Config{Policy: pol, Slurm: stockslurm.Options{Tree: true}}, controllerCycle)
		if err != nil {
			return nil, err
		}
		return queue.Replay(c, jobs, q, cfg)
	case "slurm":
		return queue.Replay(c, jobs, stockslurm.NewTree(c), cfg)
	case "slurm-flat":
		return queue.Replay(c, jobs, stockslurm.NewFlat(c), cfg)
	case queue.NaivePods:
		return queue.ReplayPods(c, jobs, cfg)
	case staticPolicy:
		slurm := func(pc *topology.Cluster) queue.Policy { return stockslurm.NewTree(pc) }
		return queue.ReplayPartitioned(c, staticPolicy, jobs, set.partitions, slurm, cfg)
	}
	return nil, fmt.Errorf("no policy %q", name)
}

// runReplays replays every (load, band, policy), one goroutine each, at
// most GOMAXPROCS at a time (each replay is single-threaded, and they
// share nothing but the read-only cluster). Progress goes to errw only
// when it is a terminal.
func runReplays(set *replaySetup, errw io.Writer) error {
	type task struct{ run, band, pol int }
	var tasks []task
	var labels []string
	for r, run := range set.runs {
		run.bands = make([]replayBand, set.slowdown.count())
		for b := range run.bands {
			run.bands[b] = replayBand{results: make([]*queue.Result, len(set.policies)), elapsed: make([]time.Duration, len(set.policies))}
			for p, name := range set.policies {
				tasks = append(tasks, task{r, b, p})
				if set.slowdown.count() > 1 {
					name = set.slowdown.bands[b].String() + "/" + name
				}
				if len(set.runs) > 1 {
					name = fmt.Sprintf("%.3g/%s", run.peak, name)
				}
				labels = append(labels, name)
			}
		}
	}
	errs := make([]error, len(tasks))
	prog := newReplayProgress(errw, labels, set.info.Jobs)
	sem := make(chan struct{}, max(1, min(runtime.GOMAXPROCS(0), len(tasks))))
	var wg sync.WaitGroup
	for i, tk := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			run, band := set.runs[tk.run], &set.runs[tk.run].bands[tk.band]
			cfg := set.slowdown.config(set.cfg, tk.band)
			if set.failures != nil {
				cfg.Failures = set.failures[tk.run]
			}
			cfg.Progress = prog.callback(i)
			start := time.Now()
			band.results[tk.pol], errs[i] = replayPolicy(set.policies[tk.pol], set, run.jobs, cfg)
			band.elapsed[tk.pol] = time.Since(start)
		}()
	}
	wg.Wait()
	prog.stop()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// replayProgress draws one status line on a terminal.
type replayProgress struct {
	w     io.Writer
	names []string
	total int
	mu    sync.Mutex
	done  []int
	quit  chan struct{}
	wg    sync.WaitGroup
}

func newReplayProgress(w io.Writer, names []string, total int) *replayProgress {
	p := &replayProgress{w: w, names: names, total: total, done: make([]int, len(names))}
	f, ok := w.(*os.File)
	if !ok {
		return p
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return p
	}
	p.quit = make(chan struct{})
	p.wg.Add(1)
	go p.draw()
	return p
}

func (p *replayProgress) callback(i int) func(done, total int) {
	return func(done, _ int) {
		p.mu.Lock()
		p.done[i] = done
		p.mu.Unlock()
	}
}

// line summarises progress: the runs in flight with their percentage,
// and how many are finished.
func (p *replayProgress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	finished := 0
	for i, name := range p.names {
		switch d := p.done[i]; {
		case d >= p.total:
			finished++
		case d > 0:
			parts = append(parts, fmt.Sprintf("%s %3.0f%%", name, 100*float64(d)/float64(max(p.total, 1))))
		}
	}
	return fmt.Sprintf("replay: %d/%d done  %s", finished, len(p.names), strings.Join(parts, "  "))
}

func (p *replayProgress) draw() {
	defer p.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.quit:
			fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 100))
			return
		case <-tick.C:
		}
		line := p.line()
		if len(line) > 99 {
			line = line[:99]
		}
		fmt.Fprintf(p.w, "\r%-99s", line)
	}
}

func (p *replayProgress) stop() {
	if p.quit != nil {
		close(p.quit)
		p.wg.Wait()
	}
}
