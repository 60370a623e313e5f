package controller

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// atOnceLab is the failure lab with rebind.restart_at_once on (or off).
func atOnceLab(t *testing.T, on bool) *failureLab {
	t.Helper()
	l := newFailureLab(t)
	l.c.rebind.cfg.Rebind.RestartAtOnce = on
	l.c.duties.conf.cfg.Rebind.RestartAtOnce = on
	return l
}

// failAndRequeue runs job 2 on node[05-06], then node06 down and job 2
// requeued: submitted again at requeued, eligible delay later.
func (l *failureLab) failAndRequeue(requeued time.Time, delay time.Duration) {
	l.t.Helper()
	l.poll(true, 0, "", nil)
	l.cycle()
	l.submit, l.eligible = requeued, requeued.Add(delay)
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
}

func (l *failureLab) atOnce(result string) float64 {
	return testutil.ToFloat64(l.c.rebind.failures.m.atOnce.WithLabelValues(result))
}

// With restart_at_once, the gang requeued after node06 failed (10 s ago)
// is re-bound to leaf2 first and then made eligible at once, in that
// order, once.
func TestRestartAtOnce(t *testing.T) {
	l := atOnceLab(t, true)
	l.failAndRequeue(time.Now().Add(-10*time.Second), 121*time.Second)
	got := l.updates()
	if len(got) != 2 || !strings.HasPrefix(got[0], "scontrol update JobId=2 Features=[gt_leaf2|") || got[1] != "scontrol update JobId=2 StartTime=now" {
		t.Fatalf("updates %q; want the re-binding, then StartTime=now\n%s", got, l.logs.String())
	}
	if l.atOnce("made") != 1 {
		t.Errorf("gangtopo_failure_restarts_at_once_total{made} = %v, want 1", l.atOnce("made"))
	}
	if !strings.Contains(l.logs.String(), "a gang requeued after a node failure may start at once") {
		t.Errorf("no log line:\n%s", l.logs.String())
	}
	// the next poll still shows its begin time (Slurm has not listed the
	// update yet): once per restart
	l.c.now = func() time.Time { return time.Now().Add(time.Second) }
	l.cycle()
	if len(l.updates()) != 2 {
		t.Errorf("updated again: %q", l.updates())
	}
}

// Requeued less than two seconds ago (its submit time, which the requeue
// set), the gang is made eligible at a later round: a start in the second
// of the requeue's kill is refused by slurmd and killed for good
// (actuate.MayRestart).
func TestRestartAtOnceNotInTheSecondOfTheRequeue(t *testing.T) {
	l := atOnceLab(t, true)
	requeued := time.Now().Add(time.Second).Truncate(time.Second) // squeue's whole seconds, after the controller's now
	l.failAndRequeue(requeued, 121*time.Second)
	if got := l.updates(); len(got) != 1 {
		t.Fatalf("updates %q; want the re-binding alone", got)
	}
	l.c.duties.door.Now = func() time.Time { return requeued.Add(2 * time.Second) }
	l.c.now = l.c.duties.door.Now
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	if got := l.updates(); len(got) != 2 || got[1] != "scontrol update JobId=2 StartTime=now" {
		t.Errorf("updates %q; want StartTime=now two seconds after the requeue", got)
	}
}

// Off (the default), the gang is re-bound and waits for Slurm's delay.
func TestRestartAtOnceOff(t *testing.T) {
	l := atOnceLab(t, false)
	l.failAndRequeue(time.Now().Add(-10*time.Second), 121*time.Second)
	if got := l.updates(); len(got) != 1 || strings.Contains(got[0], "StartTime") {
		t.Errorf("updates %q; want the re-binding alone", got)
	}
}

// A begin time that is not Slurm's requeue delay is left: one other than
// the requeue's delay from the submit time the requeue set (a user's or an
// administrator's, set after it), one passed already, none.
func TestRestartAtOnceLeavesOtherBeginTimes(t *testing.T) {
	now := time.Now().Add(-10 * time.Second) // requeued long enough ago (actuate.MayRestart)
	for name, times := range map[string][2]time.Time{
		"set after the requeue":         {now, now.Add(2 * time.Hour)},
		"set five minutes on by a user": {now, now.Add(5 * time.Minute)},
		"passed":                        {now.Add(-5 * time.Minute), now.Add(-3 * time.Minute)},
		"none":                          {now, {}},
	} {
		t.Run(name, func(t *testing.T) {
			l := atOnceLab(t, true)
			l.failAndRequeue(times[0], times[1].Sub(times[0]))
			if times[1].IsZero() {
				l.eligible = time.Time{}
				l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
				l.cycle()
			}
			for _, u := range l.updates() {
				if strings.Contains(u, "StartTime") {
					t.Errorf("updates %q; want no StartTime", l.updates())
				}
			}
		})
	}
}

// Caught while Slurm still requeues it (EpilogSlurmctld: wake.go), the
// gang is re-bound there and then but made eligible only once the requeue
// is done: an earlier StartTime would be undone by the requeue's own
// begin time.
func TestRestartAtOnceAfterTheRequeue(t *testing.T) {
	l := atOnceLab(t, true)
	l.poll(true, 0, "", nil)
	l.cycle()
	l.requeuing = true
	l.poll(true, 1, "None", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	if got := l.updates(); len(got) != 1 || strings.Contains(got[0], "StartTime") {
		t.Fatalf("updates %q while Slurm requeues it; want the re-binding alone", got)
	}
	l.requeuing = false
	l.submit, l.eligible = time.Now().Add(-5*time.Second), time.Now().Add(116*time.Second)
	l.c.now = func() time.Time { return time.Now().Add(time.Second) }
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	if got := l.updates(); len(got) != 2 || got[1] != "scontrol update JobId=2 StartTime=now" {
		t.Errorf("updates %q; want StartTime=now once the requeue is done", got)
	}
}

// An update Slurm refuses is not tried again at the same restart: the
// gang starts after Slurm's delay, as without gangtopo.
func TestRestartAtOnceFails(t *testing.T) {
	l := atOnceLab(t, true)
	l.slurm("scontrol", `if [ "$3" = show ]; then cat `+l.nodes+`; else echo "scontrol $*" >> `+l.log+
		`; case "$*" in *StartTime*) echo "slurm_update error: Access/permission denied" >&2; exit 1;; esac; fi`)
	l.failAndRequeue(time.Now().Add(-10*time.Second), 121*time.Second)
	l.c.now = func() time.Time { return time.Now().Add(time.Second) }
	l.cycle()
	n := 0
	for _, u := range l.updates() {
		if strings.Contains(u, "StartTime=now") {
			n++
		}
	}
	if n != 1 || l.atOnce("failed") != 1 {
		t.Errorf("StartTime tried %d times, failed counted %v; want once and 1\n%s", n, l.atOnce("failed"), l.logs.String())
	}
}

func TestInRequeueDelay(t *testing.T) {
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name             string
		submit, eligible time.Time
		delay            time.Duration
		want             bool
	}{
		{"the requeue's 121 s", now.Add(-5 * time.Second), now.Add(116 * time.Second), 120 * time.Second, true},
		{"the submit time moved a second on", now, now.Add(120 * time.Second), 120 * time.Second, true},
		{"requeue_delay=600", now, now.Add(601 * time.Second), 600 * time.Second, true},
		{"set after the requeue, later", now, now.Add(300 * time.Second), 120 * time.Second, false},
		{"set after the requeue, sooner", now, now.Add(60 * time.Second), 120 * time.Second, false},
		{"passed", now.Add(-200 * time.Second), now.Add(-79 * time.Second), 120 * time.Second, false},
		{"no begin time", now, time.Time{}, 120 * time.Second, false},
		{"no submit time", time.Time{}, now.Add(time.Minute), 120 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pj := slurmstate.PendingJob{Submit: tt.submit, Eligible: tt.eligible}
			if got := inRequeueDelay(pj, now, tt.delay); got != tt.want {
				t.Errorf("inRequeueDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

// Slurm's requeue delay from `scontrol show config`: SchedulerParameters'
// requeue_delay, else AuthInfo's cred_expire, else 120 s (the captures of
// the three series set neither).
func TestRequeueDelay(t *testing.T) {
	for _, series := range []string{"22.05.8", "24.11.5", "26.05.5"} {
		data, err := os.ReadFile("../traces/testdata/sacct/slurm-" + series + "/config.txt")
		if err != nil {
			t.Fatal(err)
		}
		if got := RequeueDelay(string(data)); got != DefaultRequeueDelay {
			t.Errorf("Slurm %s: %v, want %v", series, got, DefaultRequeueDelay)
		}
	}
	for conf, want := range map[string]time.Duration{
		"AuthInfo                = socket=/run/munge.sock,cred_expire=300\n":                                  300 * time.Second,
		"AuthInfo = cred_expire=300\nSchedulerParameters     = bf_interval=30,requeue_delay=10,bf_continue\n": 10 * time.Second,
		"SchedulerParameters = requeue_delay=x\n":                                                             DefaultRequeueDelay,
		"CredParameters = cred_expire=90\n":                                                                   90 * time.Second,
		"":                                                                                                    DefaultRequeueDelay,
	} {
		if got := RequeueDelay(conf); got != want {
			t.Errorf("%q: %v, want %v", conf, got, want)
		}
	}
}

// The requeue delay comes from slurm.conf as `scontrol show config`
// shows it: with AuthInfo=cred_expire=300 a begin time 301 s after the
// submit time is Slurm's, and one 121 s after it is not.
func TestRestartAtOnceReadsTheDelay(t *testing.T) {
	for delay, want := range map[time.Duration]bool{301 * time.Second: true, 121 * time.Second: false} {
		l := newFailureLab(t)
		l.actions.ShowConfig = func(context.Context) (string, error) {
			return "JobSubmitPlugins        = gangtopo\nAuthInfo                = socket=/run/munge/munge.socket.2,cred_expire=300\n", nil
		}
		l.start()
		l.c.rebind.cfg.Rebind.RestartAtOnce = true
		l.c.duties.conf.cfg.Rebind.RestartAtOnce = true
		l.failAndRequeue(time.Now().Add(-10*time.Second), delay)
		if got := len(l.updates()) == 2 && strings.HasSuffix(l.updates()[1], "StartTime=now"); got != want {
			t.Errorf("begin %v after the submit, cred_expire=300: made eligible %v, want %v (updates %q)", delay, got, want, l.updates())
		}
	}
}
