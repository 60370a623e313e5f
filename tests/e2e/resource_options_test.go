package e2e

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

func init() {
	register("ResourceOptionsAsStockSlurm", testResourceOptionsAsStockSlurm)
}

// testResourceOptionsAsStockSlurm: gangtopo under jobs: all must never
// refuse a job stock Slurm runs, nor rewrite one into a job Slurm cannot
// run or starts later. Every form of testdata/resource-options.txt (each
// option that changes how Slurm counts a job's resources, CPU-only and
// with GPUs) is submitted with `sbatch --test-only` twice on the same
// cluster state, with the plugins and on stock Slurm: Slurm's own answer
// (refused, or where and when the job would start) must be the same, or
// the plugin's placement better: it starts no later and breaks no more of
// the nodes nothing runs on. The table goes to the test log with
// gangtopo's decision per form. Then the issue's own command really runs,
// with and without the plugins: `srun -N 1 -w node02 -n 65 --overcommit
// true` on a 64-CPU node.
func testResourceOptionsAsStockSlurm(t *testing.T) {
	forms := readForms(t, "testdata/resource-options.txt")
	writeConfig(t, jobsAllForm())
	defer writeConfig(t, labConfig)
	reset(t)
	// node05-08 each run six 1-GPU jobs (30 minutes: --test-only then says
	// when a job waiting for them would start); the other nodes are idle
	holes(t, 6, "node05", "node06", "node07", "node08")
	idle := map[string]bool{}
	for _, n := range freeWholeNodes(t) {
		idle[n] = true
	}
	with, withRuns := optionAnswers(t, forms, true)
	srunOut, srunErr := srunIssue(t)
	var stock, stockRuns []formAnswer
	asStockSlurm(t, func() {
		stock, stockRuns = optionAnswers(t, forms, false)
		if out, err := srunIssue(t); err != nil {
			t.Errorf("stock Slurm: srun %s: %v\n%s", issueSrun, err, out)
		}
	})
	if srunErr != nil {
		t.Errorf("with gangtopo (jobs: all): srun %s: %v\n%s", issueSrun, srunErr, srunOut)
	}
	t.Logf("Slurm's resource options, sbatch --test-only, stock Slurm and gangtopo under jobs: all (%d forms):\n%s",
		len(forms), optionTable(t, forms, stock, with, idle))
	var runs []resourceForm
	for _, f := range forms {
		if f.run {
			runs = append(runs, f)
		}
	}
	t.Logf("the forms marked run, submitted for real one at a time (%d forms):\n%s", len(runs), optionTable(t, runs, stockRuns, withRuns, idle))
	t.Logf("srun %s: runs with gangtopo (jobs: all) and on stock Slurm", issueSrun)
}

// optionAnswers asks Slurm about every form with --test-only, then runs
// the forms marked run, on the lab as it is (with the plugins or not).
func optionAnswers(t *testing.T, forms []resourceForm, plugins bool) (answers, runs []formAnswer) {
	t.Helper()
	for _, f := range forms {
		answers = append(answers, testOnly(t, f.args, plugins))
	}
	for _, f := range forms {
		if f.run {
			runs = append(runs, runOnce(t, f.args, plugins))
		}
	}
	return answers, runs
}

// optionTable compares the answers form by form, failing the test on a
// difference that is not a better placement, and renders the table.
func optionTable(t *testing.T, forms []resourceForm, stock, with []formAnswer, idle map[string]bool) string {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "option | form | stock Slurm | gangtopo (jobs: all) | same? | gangtopo's decision\n")
	for i, f := range forms {
		verdict, ok := compareForm(stock[i], with[i], idle)
		fmt.Fprintf(&table, "%s | %s | %s | %s | %s | %s\n", f.option, f.args, stock[i], with[i], verdict, with[i].decision)
		if !ok {
			t.Errorf("%s: stock Slurm %s%s, with gangtopo %s%s (%s)", f.args, stock[i], refusal(stock[i]), with[i], refusal(with[i]), with[i].decision)
		}
	}
	return table.String()
}

// runOnce submits one form for real (a job of a few minutes' sleep), reads
// where it starts, or that it waits, then cancels it and waits until its
// resources are free again. With the plugins the snapshot is published
// first, so that the plugin decides on the cluster as it is.
func runOnce(t *testing.T, args string, plugins bool) formAnswer {
	t.Helper()
	if plugins {
		publish(t)
	}
	offset := ctldLogSize()
	argv := append([]string{"-t", "5", "-o", "/dev/null"}, strings.Fields(args)...)
	id, err := lab.Submit(ctxT(t), nil, append(argv, "--wrap", "sleep 300")...)
	var a formAnswer
	if plugins {
		a.decision = lastDecision(ctldLogSince(offset))
	}
	if err != nil {
		lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
		a.refused, a.err = true, lines[len(lines)-1]
		return a
	}
	j := settle(t, id)
	switch j.State {
	case "RUNNING", "COMPLETED":
		a.nodes = j.Nodes
	default:
		a.delay, a.waits = time.Hour, j.State+" ("+j.Reason+")"
	}
	cancelAndWait(t, id)
	return a
}

// cancelAndWait cancels a job and waits until it holds nothing.
func cancelAndWait(t *testing.T, id string) {
	t.Helper()
	_, err := lab.Run(ctxT(t), 0, "scancel", id)
	must(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-j", id, "-t", "running,completing,pending", "-o", "%T")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s 30 s after scancel", id, strings.TrimSpace(out))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// issueSrun is the command of issue 22 that jobs: all refused.
const issueSrun = "-N 1 -w node02 -n 65 --overcommit true"

// srunIssue runs issueSrun on the lab.
func srunIssue(t *testing.T) (string, error) {
	t.Helper()
	out, errOut, err := lab.RunSplit(ctxT(t), 60*time.Second, nil, "srun", strings.Fields(issueSrun)...)
	return out + errOut, err
}

// jobsAllForm is labConfig under jobs: all, with no pending hold: a
// --test-only submission's decision must not count against the next.
func jobsAllForm() string {
	return strings.Replace(labConfigAll, "pending_hold: 2s", "pending_hold: 0s", 1)
}

// holes runs count 1-GPU jobs of 30 minutes on each node.
func holes(t *testing.T, count int, nodes ...string) {
	t.Helper()
	var ids []string
	for _, node := range nodes {
		for range count {
			ids = append(ids, submit(t, "-t", "30", "-w", node, "--gpus=1", "--cpus-per-gpu=1"))
		}
	}
	for _, id := range ids {
		if j := settle(t, id); j.State != "RUNNING" {
			t.Fatalf("filler job %s: %s (%s)", id, j.State, j.Reason)
		}
	}
	publish(t)
}

// resourceForm is one line of the forms file; run: submit it for real too.
type resourceForm struct {
	option, args string
	run          bool
}

func readForms(t *testing.T, path string) []resourceForm {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	var out []resourceForm
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 2 || len(f) > 3 || len(f) == 3 && strings.TrimSpace(f[2]) != "run" {
			t.Fatalf("%s: %q is not OPTION | ARGUMENTS [| run]", path, line)
		}
		out = append(out, resourceForm{strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), len(f) == 3})
	}
	must(t, sc.Err())
	return out
}

// formAnswer is Slurm's answer to one --test-only submission.
type formAnswer struct {
	refused  bool
	err      string    // Slurm's own message (the last line) when refused
	start    time.Time // when the job would start
	delay    time.Duration
	nodes    []string
	waits    string // a real job that did not start: its state and reason
	decision string // gangtopo's decision line (with the plugins)
}

// String is the answer in the table: "refused", or "now on node[01-02]",
// or "in 29m on node05".
func (a formAnswer) String() string {
	if a.refused {
		return "refused"
	}
	if a.waits != "" {
		return a.waits
	}
	when := "now"
	if a.delay > time.Minute {
		when = "in " + a.delay.Round(time.Minute).String()
	}
	return when + " on " + hostlist.Compress(a.nodes)
}

// refusal is Slurm's last line for a refused form (" (sbatch: error:
// ...)"), "" for one Slurm accepted.
func refusal(a formAnswer) string {
	if !a.refused {
		return ""
	}
	return " (" + a.err + ")"
}

var willRunRe = regexp.MustCompile(`Job \d+ to start at (\S+) .*using \d+ processors on nodes (\S+) in partition`)

// testOnly submits one form with --test-only and reads Slurm's answer
// and, with the plugins, gangtopo's decision from slurmctld's log.
func testOnly(t *testing.T, args string, plugins bool) formAnswer {
	t.Helper()
	offset := ctldLogSize()
	t0 := time.Now()
	argv := append([]string{"--test-only", "-o", "/dev/null"}, strings.Fields(args)...)
	_, stderr, err := lab.RunSplit(ctxT(t), 0, nil, "sbatch", append(argv, "--wrap", "true")...)
	var a formAnswer
	if plugins {
		a.decision = lastDecision(ctldLogSince(offset))
	}
	m := willRunRe.FindStringSubmatch(stderr)
	if err != nil || m == nil {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		a.refused, a.err = true, lines[len(lines)-1]
		return a
	}
	start, perr := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.Local)
	nodes, herr := hostlist.Expand(m[2])
	if perr != nil || herr != nil {
		t.Fatalf("sbatch --test-only %s: cannot read %q: %v %v", args, stderr, perr, herr)
	}
	a.start, a.delay, a.nodes = start, start.Sub(t0), nodes
	return a
}

// lastDecision is the last gangtopo decision logged: its verdict, cause
// and text, shortened for the table; "no decision" when gangtopo left the
// job alone without one (out of scope).
func lastDecision(log string) string {
	i := strings.LastIndex(log, "gangtopo v1 ")
	if i < 0 {
		return "no decision"
	}
	line, _, _ := strings.Cut(log[i+len("gangtopo v1 "):], "\n")
	head, text, _ := strings.Cut(line, ": ")
	f := strings.Fields(head)
	out := f[0]
	for _, kv := range f[1:] {
		if strings.HasPrefix(kv, "cause=") || strings.HasPrefix(kv, "bound=") || strings.HasPrefix(kv, "shape=") {
			out += " " + kv
		}
	}
	if len(text) > 160 {
		text = text[:157] + "..."
	}
	return out + ": " + text
}

// compareForm judges gangtopo's answer against stock Slurm's: the same
// refusal, or a job that starts no later and breaks no more idle nodes
// (nodes nothing runs on) than stock Slurm's placement. It says which in
// the table's words.
func compareForm(stock, with formAnswer, idle map[string]bool) (string, bool) {
	switch {
	case stock.refused && with.refused:
		return "same (both refuse)", true
	case stock.refused:
		return "DIFFERENT: only gangtopo accepts", false
	case with.refused:
		return "DIFFERENT: gangtopo refuses", false
	case with.delay > stock.delay+time.Minute:
		return "WORSE: starts later", false
	}
	broken := func(nodes []string) int {
		k := 0
		for _, n := range nodes {
			if idle[n] {
				k++
			}
		}
		return k
	}
	s, w := broken(stock.nodes), broken(with.nodes)
	switch {
	case w > s:
		return fmt.Sprintf("WORSE: takes %d idle nodes, stock %d", w, s), false
	case w < s || with.delay < stock.delay-time.Minute:
		return fmt.Sprintf("better: takes %d idle nodes, stock %d", w, s), true
	}
	return "same", true
}
