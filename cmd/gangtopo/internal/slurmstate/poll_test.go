package slurmstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSlurm writes shell scripts named sinfo, squeue and scontrol into a
// temp dir. Each body is a shell snippet; $TD is the testdata directory.
func fakeSlurm(t *testing.T, bodies map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range bodies {
		script := "#!/bin/sh\nTD=" + td + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPollRunsCommands(t *testing.T) {
	bin := fakeSlurm(t, map[string]string{
		"sinfo":  `[ "$*" = "--json" ] && [ "$SLURM_JSON" = compact ] || exit 9; cat $TD/sinfo.json`,
		"squeue": `[ "$*" = "--json" ] && [ "$SLURM_JSON" = compact ] || exit 9; cat $TD/squeue.json`,
		"scontrol": `case "$*" in
  "-a -d -o show node") cat $TD/scontrol_nodes_handmade.txt ;;
  "-a -d show job") cat $TD/scontrol_jobs_handmade.txt ;;
  *) echo "scontrol: bad args $*" >&2; exit 9 ;;
esac`,
	})
	for _, tc := range []struct {
		nodes, jobs     Source
		wantN, wantJobs int
	}{
		{SinfoJSON, SqueueJSON, 8, 1},
		{ScontrolNodes, ScontrolJobs, 9, 4},
	} {
		cfg := &PollConfig{NodesFrom: tc.nodes, JobsFrom: tc.jobs, BinDir: bin, Timeout: 5 * time.Second}
		st, runs, err := Poll(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.nodes, tc.jobs, err)
		}
		if len(st.Nodes) != tc.wantN || len(st.Jobs) != tc.wantJobs || len(runs) != 2 || runs[0].Bytes == 0 {
			t.Errorf("%s + %s: %d nodes, %d jobs, runs %+v", tc.nodes, tc.jobs, len(st.Nodes), len(st.Jobs), runs)
		}
	}
}

// A failing, hanging or garbling command is an error naming it; a hanging
// one is killed with what it started.
func TestPollFailures(t *testing.T) {
	good := `cat $TD/squeue.json`
	tests := []struct {
		name, sinfo, want string
	}{
		{"exit status", `echo "sinfo: error: Unable to contact slurm controller (connect failure)" >&2; exit 1`,
			"sinfo --json: exit status 1: sinfo: error: Unable to contact slurm controller (connect failure)"},
		{"hangs", `sleep 30 & echo $! > $PIDFILE; wait`,
			"sinfo --json: no answer within 300ms (slurmctld down or overloaded?); killed"},
		{"garbled", `head -c 3000 $TD/sinfo.json`, "sinfo --json: nodes[2]: field burstbuffer_network_address: line 123: want a string key, found end of output (truncated?)"},
		{"not JSON", `echo '# sinfo 22.05.8'`, "sinfo --json: line 1: want '{', found '#'"},
		{"missing binary", "", "/sinfo: no such file or directory"},
		// a Slurm built without json-c has no serializer/json
		{"no JSON serializer", `echo "sinfo: fatal: Unable to find plugin: serializer/json" >&2; exit 1`,
			"sinfo --json: exit status 1: sinfo: fatal: Unable to find plugin: serializer/json (this Slurm has no JSON serializer, serializer/json, which is built only with json-c: rebuild Slurm with json-c, or read the text outputs with --nodes-from scontrol --jobs-from scontrol)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bodies := map[string]string{"squeue": good}
			if tc.sinfo != "" {
				bodies["sinfo"] = tc.sinfo
			}
			bin := fakeSlurm(t, bodies)
			pidFile := filepath.Join(t.TempDir(), "pid")
			t.Setenv("PIDFILE", pidFile)
			cfg := &PollConfig{NodesFrom: SinfoJSON, JobsFrom: SqueueJSON, BinDir: bin, Timeout: 300 * time.Millisecond}
			start := time.Now()
			_, _, err := Poll(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			var pe *PollError
			if !errors.As(err, &pe) || pe.Source != SinfoJSON || pe.Input {
				t.Errorf("error %#v is not a command PollError of sinfo", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("poll took %s", d)
			}
			if data, err := os.ReadFile(pidFile); err == nil {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
				if pid > 0 && alive(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("the command's child %d survived the timeout", pid)
				}
			}
		})
	}
}

func TestPollFromFiles(t *testing.T) {
	cfg := &PollConfig{NodesFrom: SinfoJSON, JobsFrom: ScontrolJobs, Files: map[Source]string{
		SinfoJSON: "testdata/sinfo.json", ScontrolJobs: "testdata/scontrol_show_job_d.txt"}}
	st, _, err := Poll(context.Background(), cfg)
	if err != nil || len(st.Nodes) != 8 || len(st.Jobs) != 1 {
		t.Fatalf("Poll = %d nodes, %d jobs, %v", len(st.Nodes), len(st.Jobs), err)
	}
	cfg.Files[SinfoJSON] = "testdata/nope.json"
	_, _, err = Poll(context.Background(), cfg)
	var pe *PollError
	if err == nil || !strings.Contains(err.Error(), "sinfo --json output: open testdata/nope.json: no such file") || !errors.As(err, &pe) || !pe.Input || pe.Source != SinfoJSON {
		t.Errorf("error = %v, want an input PollError naming the file", err)
	}
	cfg.Files[SinfoJSON] = "testdata/squeue.json"
	_, _, err = Poll(context.Background(), cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "sinfo --json output in testdata/squeue.json: ") || !errors.As(err, &pe) || !pe.Input || pe.Source != SinfoJSON {
		t.Errorf("error = %v, want it to name the file", err)
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does not),
// giving the kernel a second to deliver the kill.
func alive(pid int) bool {
	for i := 0; i < 20; i++ {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// A poll whose command outgrows its timeout (a growing backlog): killed
// once, the next poll allows twice the time and succeeds; the timeout then
// follows three times what the command took, never below the configured
// one, never above eight times it.
func TestPollTimeoutFollowsTheCluster(t *testing.T) {
	bin := fakeSlurm(t, map[string]string{
		"sinfo":  `cat $TD/sinfo.json`,
		"squeue": `sleep 0.45; cat $TD/squeue.json`,
	})
	cfg := &PollConfig{NodesFrom: SinfoJSON, JobsFrom: SqueueJSON, BinDir: bin, Timeout: 300 * time.Millisecond}
	p := NewPoller(cfg)
	_, _, err := p.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "squeue --json: no answer within 300ms (slurmctld down or overloaded?); killed; the next poll waits up to 600ms for it") {
		t.Fatalf("first poll: %v; want squeue killed after 300ms, 600ms next", err)
	}
	if _, _, err := p.Poll(context.Background()); err != nil {
		t.Fatalf("second poll, 600ms allowed: %v", err)
	}
	if got := p.timeouts[SqueueJSON]; got < 3*450*time.Millisecond || got > 8*cfg.Timeout {
		t.Errorf("squeue's timeout after a run of about 450ms: %v, want 3x that, at most %v", got, 8*cfg.Timeout)
	}
	if got := p.timeouts[SinfoJSON]; got != cfg.Timeout {
		t.Errorf("sinfo's timeout after fast runs: %v, want the configured %v", got, cfg.Timeout)
	}
	if _, _, err := Poll(context.Background(), cfg); err == nil || strings.Contains(err.Error(), "next poll") {
		t.Errorf("a one-off poll: %v; want the timeout without a next poll", err)
	}
}

func TestNextTimeout(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		timeout, took time.Duration
		err           error
		want          time.Duration
	}{
		{15 * s, 2 * s, nil, 15 * s},   // fast: the configured one
		{15 * s, 21 * s, nil, 63 * s},  // a large backlog: three times its time
		{63 * s, 50 * s, nil, 120 * s}, // at most eight times the configured
		{15 * s, 15 * s, fmt.Errorf("x: %w", errNoAnswer), 30 * s},
		{120 * s, 120 * s, fmt.Errorf("x: %w", errNoAnswer), 120 * s},
		{30 * s, 1 * s, errors.New("exit status 1"), 30 * s}, // another failure: unchanged
	} {
		if got := nextTimeout(15*s, tc.timeout, tc.took, tc.err); got != tc.want {
			t.Errorf("nextTimeout(15s, %v, %v, %v) = %v, want %v", tc.timeout, tc.took, tc.err, got, tc.want)
		}
	}
}

// With JobsWait, a slow job listing does not hold a poll up: the poll
// goes on with the last listing back, the slow one is not started twice,
// is taken by the first poll after it is back, and the next starts only
// three times its time after it started. A listing that fails is the
// error of the poll that takes it.
func TestPollJobsBehind(t *testing.T) {
	ctl := t.TempDir()
	write := func(name, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ctl, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("delay", "0")
	write("file", "squeue.json")
	write("exit", "0")
	bin := fakeSlurm(t, map[string]string{
		"sinfo": `cat $TD/sinfo.json`,
		"squeue": `CTL=` + ctl + `; echo x >> $CTL/calls; sleep $(cat $CTL/delay); ` +
			`[ "$(cat $CTL/exit)" = 0 ] || { echo "squeue: broken" >&2; exit 3; }; cat $TD/$(cat $CTL/file)`,
	})
	calls := func() int {
		data, _ := os.ReadFile(filepath.Join(ctl, "calls"))
		return strings.Count(string(data), "x")
	}
	cfg := &PollConfig{NodesFrom: SinfoJSON, JobsFrom: SqueueJSON, BinDir: bin, Timeout: 5 * time.Second, JobsWait: 200 * time.Millisecond}
	ctx := context.Background()
	var p *Poller
	// untilDue sleeps until p may start its next job listing
	untilDue := func() {
		time.Sleep(time.Until(p.lastJobs.started.Add(3*p.lastJobs.run.Duration)) + 10*time.Millisecond)
	}
	poll := func(what string, wantFresh bool, wantJobs, wantCalls int) *State {
		t.Helper()
		t0 := time.Now()
		st, _, err := p.Poll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if st.JobsFresh != wantFresh || len(st.Jobs) != wantJobs || calls() != wantCalls || len(st.Nodes) != 8 {
			t.Errorf("%s: fresh %v, %d jobs, %d squeue calls, %d nodes; want fresh %v, %d jobs, %d calls, 8 nodes",
				what, st.JobsFresh, len(st.Jobs), calls(), len(st.Nodes), wantFresh, wantJobs, wantCalls)
		}
		if !wantFresh && time.Since(t0) > time.Second {
			t.Errorf("%s: the poll took %s waiting for a slow job listing", what, time.Since(t0))
		}
		return st
	}
	lab16 := len(mustPollFile(t, "lab16_squeue.json"))
	if lab16 == 1 {
		t.Fatal("testdata: lab16_squeue.json should list another number of jobs than squeue.json's 1")
	}

	p = NewPoller(cfg)
	if first := poll("first poll", true, 1, 1); first.JobsAge != 0 {
		t.Errorf("a poll's own listing is %s old, want 0", first.JobsAge)
	}
	end1 := time.Now() // the first listing started before
	untilDue()
	write("delay", "1.5")
	write("file", "lab16_squeue.json")
	start2 := time.Now()
	poll("slow listing started", false, 1, 2)
	end2 := time.Now() // the slow listing started between start2 and end2
	start3 := time.Now()
	if st := poll("slow listing still out", false, 1, 2); st.JobsAge < start3.Sub(end1) {
		t.Errorf("the first listing's age %s, want at least the %s from the first poll's end to this one", st.JobsAge, start3.Sub(end1))
	}
	time.Sleep(2500 * time.Millisecond) // a second of margin on a loaded machine
	start4 := time.Now()
	back := poll("slow listing back", true, lab16, 2)
	if end4 := time.Now(); back.JobsAge < start4.Sub(end2) || back.JobsAge > end4.Sub(start2) {
		t.Errorf("the listing back is %s old, want between %s and %s (it started in the second poll)", back.JobsAge, start4.Sub(end2), end4.Sub(start2))
	}
	poll("paced: within three times its time", false, lab16, 2)

	// a listing that fails: the poll that takes it says so
	write("delay", "0")
	write("exit", "1")
	p = NewPoller(cfg)
	if _, _, err := p.Poll(ctx); err == nil {
		t.Fatal("first poll with a failing squeue: no error")
	}
	write("exit", "0")
	p = NewPoller(cfg)
	poll("fresh poller", true, lab16, 4)
	untilDue()
	write("exit", "1")
	_, _, err := p.Poll(ctx)
	var pe *PollError
	if !errors.As(err, &pe) || pe.Source != SqueueJSON || !strings.Contains(err.Error(), "broken") {
		t.Errorf("a failed listing in the background: %v, want a PollError of squeue --json", err)
	}
}

// mustPollFile parses saved squeue --json output from testdata.
func mustPollFile(t *testing.T, name string) []Job {
	t.Helper()
	st, _, err := Poll(context.Background(), &PollConfig{NodesFrom: SinfoJSON, JobsFrom: SqueueJSON,
		Files: map[Source]string{SinfoJSON: "testdata/sinfo.json", SqueueJSON: "testdata/" + name}})
	if err != nil {
		t.Fatal(err)
	}
	return st.Jobs
}
