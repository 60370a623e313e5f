package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// dutyLab is a controller with its duties over the quota lab's capture
// (pending job 52 of teama, 16 GPUs), in which job 52 may carry a pin's
// mark; scontrol logs what it is asked and sleeps `delay` first; plugins
// is what slurm.conf's JobSubmitPlugins says.
type dutyLab struct {
	*lab
	log, squeue string
	cfg         ctld.Config
}

func newDutyLab(t *testing.T, edit func(*ctld.Config), mark *actuate.Mark, delay, plugins string) *dutyLab {
	t.Helper()
	l := &dutyLab{lab: &lab{t: t, bin: t.TempDir()}}
	dir := t.TempDir()
	l.out, l.topo = filepath.Join(dir, "snapshot.json"), "../../../../docs/examples/lab16.yaml"
	l.log, l.squeue = filepath.Join(dir, "commands.log"), filepath.Join(dir, "squeue.json")
	l.writeSqueue(mark)
	l.slurm("sinfo", "cat "+abs(t, testdata+"quota_sinfo.json"))
	l.slurm("squeue", "cat "+l.squeue)
	l.slurm("scontrol", "sleep "+delay+"; echo \"scontrol $*\" >> "+l.log)
	var err error
	if l.d, err = daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "debug"}, &l.logs); err != nil {
		t.Fatal(err)
	}
	l.cfg = ctld.Defaults()
	actions := testActions(t, l.bin, &l.cfg)
	actions.ShowConfig = func(context.Context) (string, error) { return "JobSubmitPlugins        = " + plugins + "\n", nil }
	if edit != nil {
		edit(&l.cfg)
	}
	l.c, err = New(Config{Topology: l.topo, Output: l.out, Workload: frag.PhillyPrior(1),
		Poll:   &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON, BinDir: l.bin, Timeout: 10 * time.Second},
		Rebind: &RebindSetup{ConfigPath: "/nonexistent/gangtopo.yaml", Config: l.cfg}, Actions: actions}, l.d)
	if err != nil {
		t.Fatal(err)
	}
	l.cluster = l.c.topo.Cluster
	return l
}

// writeSqueue writes the capture with job 52 pinned by mark (when given)
// to node[13-14], in the reclaim QOS.
func (l *dutyLab) writeSqueue(mark *actuate.Mark) {
	l.t.Helper()
	data, err := os.ReadFile(testdata + "quota_squeue.json")
	if err != nil {
		l.t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		l.t.Fatal(err)
	}
	for _, j := range doc["jobs"].([]any) {
		job := j.(map[string]any)
		if job["job_id"].(float64) == 52 && mark != nil {
			job["admin_comment"] = actuate.WithMark("", *mark)
			job["required_nodes"] = "node[13-14]"
			job["qos"] = "gt-reclaim"
		}
	}
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(l.squeue, out, 0o644); err != nil {
		l.t.Fatal(err)
	}
}

var pinOf52 = actuate.Mark{By: "quota", Nodes: "node[13-14]", QOS: "gt-teama"}

// TestExpiredPinIsUndone: a pin whose mark expired (made by this
// controller before a restart, or by another) is taken out: the node list
// cleared, the QOS put back, the mark removed; one not expired stays.
func TestExpiredPinIsUndone(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name  string
		until time.Time
		want  []string
	}{
		{"expired", now.Add(-time.Minute), []string{"scontrol update JobId=52 AdminComment= ReqNodeList= QOS=gt-teama"}},
		{"not yet", now.Add(time.Hour), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := pinOf52
			m.Until = tt.until
			l := newDutyLab(t, func(c *ctld.Config) { c.Quota.Enabled = true }, &m, "0", "gangtopo")
			if _, err := l.c.cycle(context.Background(), now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, commands(t, l.log)); diff != "" {
				t.Errorf("commands (-want +got):\n%s\nlogs:\n%s", diff, l.logs.String())
			}
		})
	}
}

// TestSwitchedOffPutsBack: with gangtopo out of slurm.conf's
// JobSubmitPlugins (the fast off switch) or actions.enabled false, a pin
// not yet expired is put back and nothing else is changed; a controller
// that does not lead changes nothing at all.
func TestSwitchedOffPutsBack(t *testing.T) {
	undo := []string{"scontrol update JobId=52 AdminComment= ReqNodeList= QOS=gt-teama"}
	for _, tt := range []struct {
		name    string
		edit    func(*ctld.Config)
		plugins string
		want    []string
		state   string
	}{
		{"plugin out of slurm.conf", nil, "lua", undo, "not in slurm.conf's JobSubmitPlugins"},
		{"actions.enabled false", func(c *ctld.Config) { c.Actions.Enabled = false }, "lua,gangtopo", undo, "actions.enabled is false"},
		{"quota off", func(c *ctld.Config) { c.Quota.Enabled = false }, "gangtopo", undo, "acting"},
		{"not the leader", func(c *ctld.Config) { c.Actions.Leader = ctld.LeaderNever }, "lua", nil, "publishes snapshots only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := pinOf52
			m.Until = time.Now().Add(time.Hour)
			l := newDutyLab(t, func(c *ctld.Config) {
				c.Quota.Enabled = true
				if tt.edit != nil {
					tt.edit(c)
				}
			}, &m, "0", tt.plugins)
			if _, err := l.c.cycle(context.Background(), time.Now()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, commands(t, l.log)); diff != "" {
				t.Errorf("commands (-want +got):\n%s\nlogs:\n%s", diff, l.logs.String())
			}
			if !strings.Contains(l.logs.String(), tt.state) {
				t.Errorf("no log line saying %q:\n%s", tt.state, l.logs.String())
			}
			if _, err := os.Stat(l.out); err != nil {
				t.Errorf("the snapshot was not published: %v", err)
			}
		})
	}
}

// TestPollKeepsItsPeriod: with the duties in their own goroutine, a cycle
// publishes and returns while the duties wait for a slow scontrol (an
// expired pin to undo, scontrol answering after 3 s): the snapshot does
// not age behind them.
func TestPollKeepsItsPeriod(t *testing.T) {
	m := pinOf52
	m.Until = time.Now().Add(-time.Minute)
	l := newDutyLab(t, nil, &m, "3", "gangtopo")
	l.c.cfg.AsyncDuties = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 3; i++ {
		start := time.Now()
		if err := l.c.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("cycle %d took %s: it waited for the duties", i, took)
		}
		if age := l.c.age(); age > 2 {
			t.Fatalf("snapshot %gs old after cycle %d", age, i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(commands(t, l.log)) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := commands(t, l.log); len(got) == 0 || !strings.Contains(got[0], "JobId=52") {
		t.Errorf("the duty loop did not undo the expired pin: %q", got)
	}
	cancel()
	<-l.c.duties.done // nothing of the loop's outlives the test's files
}

// TestStateBeforeLastRoundSkipped: a state polled before the last round
// ended may not show that round's changes (the pin it undid still there);
// the duty loop does not act on it, so no change is made twice.
func TestStateBeforeLastRoundSkipped(t *testing.T) {
	m := pinOf52
	m.Until = time.Now().Add(-time.Minute)
	l := newDutyLab(t, func(c *ctld.Config) { c.Rebind.Enabled = false }, &m, "0", "gangtopo")
	polledEarly := time.Now()
	if _, err := l.c.cycle(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(commands(t, l.log)); n != 1 {
		t.Fatalf("%d commands after the first round, want the pin undone once", n)
	}
	st, _, err := l.c.poll.Poll(context.Background()) // still shows the mark
	if err != nil {
		t.Fatal(err)
	}
	l.c.round(context.Background(), dutyState{s: nil, st: st, at: polledEarly, cluster: l.cluster})
	if n := len(commands(t, l.log)); n != 1 {
		t.Errorf("%d commands: a state polled before the last round ended was acted on", n)
	}
}

// TestDutyPanicKeepsPublishing: a duty round that panics (here the command
// runner of an expired pin's undo) is logged and counted; the cycle still
// publishes its snapshot, and the next round runs.
func TestDutyPanicKeepsPublishing(t *testing.T) {
	m := pinOf52
	m.Until = time.Now().Add(-time.Minute)
	l := newDutyLab(t, func(c *ctld.Config) { c.Quota.Enabled = true }, &m, "0", "gangtopo")
	calls := 0
	d := l.c.duties
	d.door = actuate.NewDoor(func(context.Context, time.Duration, string, ...string) (string, error) {
		calls++
		panic("a bug")
	}, actuate.Audit{Path: d.conf.cfg.Actions.AuditLog}, d.lock, "controller", doorConfig(d.conf.cfg.Actions, false))
	for i, now := range []time.Time{time.Now(), time.Now().Add(time.Minute)} {
		if _, err := l.c.cycle(context.Background(), now); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if _, err := os.Stat(l.out); err != nil {
			t.Fatalf("cycle %d published no snapshot: %v", i, err)
		}
	}
	if calls != 2 || !strings.Contains(l.logs.String(), "a duty round panicked") {
		t.Errorf("runner called %d times (want 2, once a round); logs:\n%s", calls, l.logs.String())
	}
}

// TestDutiesWaitForAFreshJobListing: with the job listing behind the polls
// (slurmstate's JobsWait), a cycle whose poll went on with an earlier
// listing publishes its snapshot but runs no duty round, so nothing is
// acted on twice from one listing (here: the expired pin the first round
// undid, which that listing still shows); the round runs again once a
// new listing is back.
func TestDutiesWaitForAFreshJobListing(t *testing.T) {
	m := pinOf52
	m.Until = time.Now().Add(-time.Minute)
	l := newDutyLab(t, func(c *ctld.Config) { c.Rebind.Enabled = false }, &m, "0", "gangtopo")
	delay := filepath.Join(t.TempDir(), "delay")
	setDelay := func(s string) {
		if err := os.WriteFile(delay, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setDelay("0")
	l.slurm("squeue", "sleep $(cat "+delay+"); cat "+l.squeue)
	behind := *l.c.cfg.Poll
	behind.JobsWait = 200 * time.Millisecond
	l.c.poll = slurmstate.NewPoller(&behind)
	ctx := context.Background()
	if _, err := l.c.cycle(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(commands(t, l.log)); n != 1 {
		t.Fatalf("%d commands after the first round, want the pin undone once", n)
	}
	time.Sleep(time.Second) // the next listing is due (three times the last one's time)
	setDelay("2")
	if err := os.Remove(l.out); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := l.c.cycle(ctx, start); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("the cycle took %s: it waited for the slow job listing", took)
	}
	if _, err := os.Stat(l.out); err != nil {
		t.Errorf("no snapshot published while the job listing was out: %v", err)
	}
	if n := len(commands(t, l.log)); n != 1 {
		t.Errorf("%d commands: a round ran on the listing the last round acted on", n)
	}
	time.Sleep(3 * time.Second) // a second of margin on a loaded machine
	if _, err := l.c.cycle(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(commands(t, l.log)); n != 2 {
		t.Errorf("%d commands: no round on the new listing (which still shows the pin, so it is undone again)", n)
	}
	if age := testutil.ToFloat64(l.c.m.jobsAge); age < 2.5 {
		t.Errorf("gangtopo_job_listing_age_seconds %g, want the 3 s since the second cycle started the listing the third took", age)
	}
	if !strings.Contains(l.logs.String(), `"jobs_fresh":false`) || !strings.Contains(l.logs.String(), `"jobs_fresh":true`) {
		t.Errorf("the published lines do not say which listing they used:\n%s", l.logs.String())
	}
}
