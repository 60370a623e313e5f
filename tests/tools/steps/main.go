package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	title := flag.String("title", "make test", "what the run is called in its messages")
	makeCmd := flag.String("make", "make", "the make to run each step with")
	logs := flag.String("logs", "build/test-logs", "directory for each step's log")
	each := flag.String("each", "", "steps (comma- or space-separated) that run even when one of them failed")
	flag.Parse()
	r := runner{title: *title, logs: *logs, each: map[string]bool{}, stdout: os.Stdout,
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
// whether every step passed.
func (r *runner) runAll(steps []string) bool {
	stopped := false
	for i, step := range steps {
		if stopped && !(r.each[step] && r.onlyEachFailed()) {
			r.done = append(r.done, result{step: step})
			continue
		}
		fmt.Fprintf(r.stdout, "%s: [%d/%d] %s\n", r.title, i+1, len(steps), step)
		res := r.step(step)
		r.done = append(r.done, res)
		state := "ok"
		if res.failed {
			state = "FAILED"
			stopped = true
		}
		fmt.Fprintf(r.stdout, "%s: [%d/%d] %s: %s in %s\n", r.title, i+1, len(steps), step, state, seconds(res.took))
	}
	return r.summary()
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

// step runs one step, its output to the terminal and its log.
func (r *runner) step(step string) result {
	res := result{step: step, ran: true, logPath: filepath.Join(r.logs, step+".log")}
	f, err := os.Create(res.logPath)
	if err != nil {
		res.failed, res.reason = true, err.Error()
		return res
	}
	defer f.Close()
	t0 := time.Now()
	err = r.run(step, io.MultiWriter(r.stdout, f))
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
// run ended.
func (r *runner) summary() bool {
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
	if len(failed) == 0 {
		fmt.Fprintf(r.stdout, "%s: PASSED (%d steps in %s)\n", r.title, len(r.done), seconds(total))
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
