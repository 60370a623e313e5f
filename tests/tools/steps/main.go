package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

func main() {
	title := flag.String("title", "make test", "what the run is called in its messages")
	makeCmd := flag.String("make", "make", "the make to run each step with")
	logs := flag.String("logs", "build/test-logs", "directory for each step's log")
	each := flag.String("each", "", "steps (comma- or space-separated) that run even when one of them failed")
	jobs := flag.Int("jobs", 1, "how many steps of -each run at once")
	flag.Parse()
	r := runner{title: *title, logs: *logs, each: map[string]bool{}, jobs: *jobs, stdout: os.Stdout,
		run: func(step string, out io.Writer) error {
			cmd := exec.Command(*makeCmd, "--no-print-directory", step)
			cmd.Stdout, cmd.Stderr = out, out
			return cmd.Run()
		}}
	for _, s := range strings.FieldsFunc(*each, func(c rune) bool { return c == ',' || c == ' ' }) {
		r.each[s] = true
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "steps: no steps given")
		os.Exit(2)
	}
	if err := os.MkdirAll(r.logs, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "steps:", err)
		os.Exit(2)
	}
	if !r.runAll(flag.Args()) {
		os.Exit(1)
	}
}

// runner runs steps and keeps what it says about them.
type runner struct {
	title, logs string
	each        map[string]bool
	jobs        int // steps of each run at once (1: one after another)
	stdout      io.Writer
	run         func(step string, out io.Writer) error
	done        []result
}

// result is one step's outcome.
type result struct {
	step    string
	took    time.Duration
	ran     bool
	failed  bool
	reason  string
	logPath string
}

// runAll runs the steps in order and prints the summary; it reports
// whether every step passed. Consecutive steps of each run jobs at a time
// (runPool).
func (r *runner) runAll(steps []string) bool {
	t0 := time.Now()
	stopped := false
	for i := 0; i < len(steps); i++ {
		step := steps[i]
		if stopped && !(r.each[step] && r.onlyEachFailed()) {
			r.done = append(r.done, result{step: step})
			continue
		}
		if r.jobs > 1 && r.each[step] {
			j := i
			for j < len(steps) && r.each[steps[j]] {
				j++
			}
			if j-i > 1 {
				stopped = r.runPool(steps[i:j], i, len(steps)) || stopped
				i = j - 1
				continue
			}
		}
		fmt.Fprintf(r.stdout, "%s: [%d/%d] %s\n", r.title, i+1, len(steps), step)
		res := r.step(step, true)
		r.done = append(r.done, res)
		if res.failed {
			stopped = true
		}
		r.ended(res, i, len(steps))
	}
	return r.summary(time.Since(t0))
}

// ended prints the line that says how step i of n went.
func (r *runner) ended(res result, i, n int) {
	state := "ok"
	if res.failed {
		state = "FAILED"
	}
	fmt.Fprintf(r.stdout, "%s: [%d/%d] %s: %s in %s\n", r.title, i+1, n, res.step, state, seconds(res.took))
}

// runPool runs steps (steps first..first+len-1 of n) jobs at a time, in
// order: each takes the next step when one ends. A running step's output
// goes to its log only; when it ends its whole log is printed at once, so
// that the output of steps running together is never interleaved. It
// reports whether a step failed.
func (r *runner) runPool(steps []string, first, n int) (failed bool) {
	results := make([]result, len(steps))
	next := make(chan int)
	var mu sync.Mutex // the terminal
	var wg sync.WaitGroup
	for range min(r.jobs, len(steps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				mu.Lock()
				fmt.Fprintf(r.stdout, "%s: [%d/%d] %s (up to %d steps at once; its output when it ends)\n", r.title, first+k+1, n, steps[k], r.jobs)
				mu.Unlock()
				res := r.step(steps[k], false)
				results[k] = res
				mu.Lock()
				if out, err := os.ReadFile(res.logPath); err == nil {
					fmt.Fprintf(r.stdout, "%s: ---- %s's output ----\n%s", r.title, steps[k], out)
				}
				r.ended(res, first+k, n)
				mu.Unlock()
			}
		}()
	}
	for k := range steps {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, res := range results {
		r.done = append(r.done, res)
		failed = failed || res.failed
	}
	return failed
}

// onlyEachFailed reports whether every failed step so far is one of -each.
func (r *runner) onlyEachFailed() bool {
	for _, d := range r.done {
		if d.failed && !r.each[d.step] {
			return false
		}
	}
	return true
}

// step runs one step, its output to its log and, with echo, to the
// terminal as it comes.
func (r *runner) step(step string, echo bool) result {
	res := result{step: step, ran: true, logPath: filepath.Join(r.logs, step+".log")}
	f, err := os.Create(res.logPath)
	if err != nil {
		res.failed, res.reason = true, err.Error()
		return res
	}
	defer f.Close()
	t0 := time.Now()
	var out io.Writer = f
	if echo {
		out = io.MultiWriter(r.stdout, f)
	}
	err = r.run(step, out)
	res.took = time.Since(t0)
	if err != nil {
		res.failed = true
		out, _ := os.ReadFile(res.logPath)
		res.reason = Reason(string(out))
		if res.reason == "" {
			res.reason = err.Error()
		}
	}
	return res
}

// summary prints every step's time and, last, the line that says how the
// run ended; wall is how long the run took (less than the steps' total
// when steps ran at once).
func (r *runner) summary(wall time.Duration) bool {
	fmt.Fprintf(r.stdout, "\n%s: steps\n", r.title)
	var failed []result
	var total time.Duration
	for _, d := range r.done {
		state := "not run"
		switch {
		case d.failed:
			state = "FAILED"
			failed = append(failed, d)
		case d.ran:
			state = "ok"
		}
		total += d.took
		fmt.Fprintf(r.stdout, "  %-14s %7s  %s\n", d.step, seconds(d.took), state)
	}
	fmt.Fprintf(r.stdout, "  %-14s %7s\n", "total", seconds(total))
	if r.jobs > 1 {
		fmt.Fprintf(r.stdout, "  %-14s %7s  (steps of -each ran %d at once)\n", "wall", seconds(wall), r.jobs)
	}
	if len(failed) == 0 {
		fmt.Fprintf(r.stdout, "%s: PASSED (%d steps in %s)\n", r.title, len(r.done), seconds(wall))
		return true
	}
	for _, d := range failed[1:] {
		fmt.Fprintf(r.stdout, "%s: FAILED in %s: %s (log: %s)\n", r.title, d.step, d.reason, d.logPath)
	}
	first, also := failed[0], ""
	if len(failed) > 1 {
		also = fmt.Sprintf("; also failed: %d more step(s), above", len(failed)-1)
	}
	fmt.Fprintf(r.stdout, "%s: FAILED in %s: %s (log: %s)%s\n", r.title, first.step, first.reason, first.logPath, also)
	return false
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}
