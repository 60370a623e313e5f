package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// The share is the controller's RPCs of each type times the type's mean
// time in the window, over all the time served.
func TestEstimateShare(t *testing.T) {
	delta := map[string]slurmstate.RPCCount{
		"REQUEST_NODE_INFO":        {Count: 12, TotalUs: 120000}, // 6 of them ours: 60,000
		"REQUEST_PARTITION_INFO":   {Count: 6, TotalUs: 6000},    // all ours
		"REQUEST_JOB_INFO":         {Count: 2, TotalUs: 30000},   // we counted 3: at most the 2 served
		"REQUEST_SUBMIT_BATCH_JOB": {Count: 100, TotalUs: 844000},
	}
	own := map[string]int64{"REQUEST_NODE_INFO": 6, "REQUEST_PARTITION_INFO": 6, "REQUEST_JOB_INFO": 3, "REQUEST_STATS_INFO": 1}
	share, mine, total, ok := estimateShare(delta, own)
	if want := 96000.0 / 1000000; !ok || share != want || mine != 96000 || total != 1000000 {
		t.Errorf("share %v of %v µs, %v µs ours (%v), want %v", share, total, mine, ok, want)
	}
	if _, _, _, ok := estimateShare(map[string]slurmstate.RPCCount{}, own); ok {
		t.Error("a share of nothing served")
	}
}

// A window above the bound lengthens the period at once (at most
// doubled); the share over the horizon shortens it (at most halved);
// within a tenth of the bound nothing changes; between the interval and
// the longest.
func TestNextPeriod(t *testing.T) {
	cfg := RPCShareSetup{Max: 0.05, Interval: 5 * time.Second, Longest: 30 * time.Second}
	for _, tc := range []struct {
		p               time.Duration
		window, horizon float64
		want            time.Duration
	}{
		{5 * time.Second, 0.02, 0.02, 5 * time.Second},          // under the bound at the interval
		{5 * time.Second, 0.075, 0.03, 7500 * time.Millisecond}, // a busy window: 1.5 x at once
		{5 * time.Second, 0.40, 0.40, 10 * time.Second},         // at most doubled
		{20 * time.Second, 0.40, 0.40, 30 * time.Second},        // at most the longest
		{20 * time.Second, 0.053, 0.053, 20 * time.Second},      // within a tenth: unchanged
		{20 * time.Second, 0.01, 0.047, 20 * time.Second},       // a quiet window, the horizon within a tenth: unchanged
		{20 * time.Second, 0.001, 0.20, 20 * time.Second},       // a quiet window, a busy horizon: unchanged
		{20 * time.Second, 0.01, 0.03, 12 * time.Second},        // quiet window and horizon: 0.6 x
		{20 * time.Second, 0.001, 0.01, 10 * time.Second},       // at most halved
		{6 * time.Second, 0.001, 0.01, 5 * time.Second},         // at least the interval
	} {
		if got := nextPeriod(tc.p, tc.window, tc.horizon, cfg); got != tc.want {
			t.Errorf("nextPeriod(%v, %v, %v) = %v, want %v", tc.p, tc.window, tc.horizon, got, tc.want)
		}
	}
}

// sdiagText is sdiag's layout (testdata/slurm-*/sdiag.txt) with the
// given counters: type -> count, total µs.
func sdiagText(since int64, counters map[string][2]int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*******************************************************\nData since      Sun Dec 06 21:53:07 2026 (%d)\n", since)
	b.WriteString("*******************************************************\n\nRemote Procedure Call statistics by message type\n")
	for typ, c := range counters {
		fmt.Fprintf(&b, "\t%-40s( 2007) count:%-6d ave_time:%-6d total_time:%d\n", typ, c[0], c[1]/max(c[0], 1), c[1])
	}
	b.WriteString("\nRemote Procedure Call statistics by user\n\troot            (       0) count:999    ave_time:1      total_time:999\n")
	return b.String()
}

// The controller with --max-rpc-share over fake Slurm commands: it reads
// sdiag once a window of six intervals, estimates its share from its own
// listings over the last four windows, spaces the cycles out while it is
// above the bound (the period at most doubled a window, never past the
// longest, which is warned about once), starts a new window after a reset,
// and keeps the period when sdiag fails.
func TestRPCShareSpacesCycles(t *testing.T) {
	l := newLab(t)
	l.c.cfg.Poll.Timeout = 10 * time.Second // 36 cycles of fake commands: no timeouts on a busy machine
	l.c.share = newRPCShare(RPCShareSetup{Max: 0.05, Interval: time.Second, Longest: 3 * time.Second}, l.d.Log, l.d.Space, prometheus.NewRegistry())
	t.Cleanup(func() { slurmstate.ObserveCommands(nil) })
	clock := time.Unix(1796594000, 0)
	l.c.now = func() time.Time { return clock }
	// per window of six cycles: our 6 sinfo (NODE_INFO, PARTITION_INFO),
	// 6 squeue (JOB_INFO) and the sdiag of the reading before; others:
	// submissions
	served := map[string][2]int64{}
	var since int64 = 1796593987
	window := func(submitUs int64) {
		for typ, c := range map[string][2]int64{"REQUEST_NODE_INFO": {6, 60000}, "REQUEST_PARTITION_INFO": {6, 6000},
			"REQUEST_JOB_INFO": {6, 30000}, "REQUEST_STATS_INFO": {1, 100}, "REQUEST_SUBMIT_BATCH_JOB": {100, submitUs}} {
			s := served[typ]
			served[typ] = [2]int64{s[0] + c[0], s[1] + c[1]}
		}
	}
	writeSdiag := func() { l.slurm("sdiag", "cat <<'END'\n"+sdiagText(since, served)+"END") }
	cycles := func(n int) {
		t.Helper()
		for range n {
			if err := l.c.Cycle(context.Background()); err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(time.Second)
		}
	}
	writeSdiag()
	cycles(6) // the first reading, then five cycles without sdiag
	if got := l.c.share.period; got != time.Second {
		t.Fatalf("period %v before any window, want the interval", got)
	}
	// 96,100 µs ours of 1,000,100 served: 9.6%, above 5%: the period x1.92
	window(904000)
	writeSdiag()
	cycles(6)
	if got := l.c.share.period; got != 1900*time.Millisecond {
		t.Errorf("period %v after a window at 9.6%%, want 1.9s", got)
	}
	if got := testutil.ToFloat64(l.c.share.share); got < 9.6 || got > 9.62 {
		t.Errorf("gangtopo_slurmctld_rpc_share_percent %v, want 9.61", got)
	}
	// a heavier window (16.1% over the two): doubled, past the longest:
	// 3 s, warned once
	window(100000)
	writeSdiag()
	cycles(6)
	window(100000)
	writeSdiag()
	cycles(6)
	if got := l.c.share.period; got != 3*time.Second {
		t.Errorf("period %v after two windows far above the bound, want the longest, 3s", got)
	}
	warned := 0
	for _, line := range strings.Split(l.logs.String(), "\n") {
		if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "above --max-rpc-share at the longest period") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("the longest period was warned about %d times, want once:\n%s", warned, l.logs.String())
	}
	// reset counters: a new window, the period as it was
	since += 3600
	served = map[string][2]int64{}
	writeSdiag()
	cycles(6)
	if got := l.c.share.period; got != 3*time.Second {
		t.Errorf("period %v after a reset, want it kept", got)
	}
	// a failing sdiag: warned, counted, the period kept
	l.slurm("sdiag", "echo 'sdiag: error: slurm_get_statistics: Unable to contact slurm controller' >&2; exit 1")
	cycles(6)
	if got := testutil.ToFloat64(l.c.share.errors); got != 1 {
		t.Errorf("gangtopo_sdiag_errors_total %v, want 1", got)
	}
	if !strings.Contains(l.logs.String(), "sdiag failed: the controller's share of slurmctld's RPC time is not known") {
		t.Errorf("a failed sdiag was not logged:\n%s", l.logs.String())
	}
	// a light window (1.1%): the share over the last four windows, 3.7%,
	// shortens the period by 0.73 (one window alone would halve it)
	served = map[string][2]int64{}
	writeSdiag()
	cycles(6) // read again a window after the failure
	window(9000000)
	writeSdiag()
	cycles(6)
	if got := l.c.share.period; got != 2200*time.Millisecond {
		t.Errorf("period %v after a window at 1.1%% (3.7%% over four), want 2.2s", got)
	}
	if !strings.Contains(l.logs.String(), `"next_period":2200,"time"`) || !strings.Contains(l.logs.String(), "below --max-rpc-share: cycles closer together") {
		t.Errorf("the way back was not logged:\n%s", l.logs.String())
	}
}

// Each Slurm command counts as the RPCs it sends slurmctld.
func TestCommandTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sinfo", []string{"--json"}, []string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"}},
		{"scontrol", []string{"-a", "--json", "show", "nodes"}, []string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"}},
		{"scontrol", []string{"-a", "-d", "-o", "show", "node"}, []string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"}},
		{"squeue", []string{"--json"}, []string{"REQUEST_JOB_INFO"}},
		{"squeue", []string{"--json", "--jobs=12", "--states=all"}, []string{"REQUEST_FED_INFO", "REQUEST_JOB_INFO_SINGLE"}},
		{"squeue", []string{"--json", "--jobs=12,13"}, []string{"REQUEST_JOB_INFO"}},
		{"scontrol", []string{"-a", "-d", "show", "job"}, []string{"REQUEST_JOB_INFO"}},
		{"scontrol", []string{"show", "job", "12"}, []string{"REQUEST_JOB_INFO_SINGLE"}},
		{"scontrol", []string{"show", "reservation"}, []string{"REQUEST_RESERVATION_INFO"}},
		{"scontrol", []string{"-o", "show", "res"}, []string{"REQUEST_RESERVATION_INFO"}},
		{"scontrol", []string{"show", "config"}, []string{"REQUEST_BUILD_INFO"}},
		{"scontrol", []string{"ping"}, []string{"REQUEST_PING"}},
		{"scontrol", []string{"update", "JobId=12", "ExcNodeList=node[01-04]"}, []string{"REQUEST_UPDATE_JOB"}},
		{"scontrol", []string{"update", "jobid=12", "QOS=gt-borrow"}, []string{"REQUEST_UPDATE_JOB"}},
		{"scontrol", []string{"update", "ReservationName=gangtopo_defrag_7", "EndTime=now"}, []string{"REQUEST_UPDATE_RESERVATION"}},
		{"scontrol", []string{"requeue", "12"}, []string{"REQUEST_JOB_REQUEUE"}},
		{"scontrol", []string{"create", "reservation", "ReservationName=gangtopo_defrag_7"}, []string{"REQUEST_CREATE_RESERVATION"}},
		{"scontrol", []string{"delete", "ReservationName=gangtopo_defrag_7"}, []string{"REQUEST_DELETE_RESERVATION"}},
		{"sdiag", nil, []string{"REQUEST_STATS_INFO"}},
		{"sacctmgr", []string{"-i", "modify", "qos"}, nil},
		{"scontrol", []string{"update"}, nil},
		{"scontrol", []string{"--json"}, nil},
	} {
		if got := commandTypes(tc.name, tc.args, "26.05.5"); !slices.Equal(got, tc.want) {
			t.Errorf("commandTypes(%s %v) = %v, want %v", tc.name, tc.args, got, tc.want)
		}
	}
	// 22.05 loads every job for squeue --json --jobs=ID (sdiag's counters
	// around it on 22.05.8); a release not known yet counts as a later one
	for release, want := range map[string][]string{"22.05.8": {"REQUEST_JOB_INFO"}, "24.11.5": {"REQUEST_FED_INFO", "REQUEST_JOB_INFO_SINGLE"},
		"": {"REQUEST_FED_INFO", "REQUEST_JOB_INFO_SINGLE"}} {
		if got := commandTypes("squeue", []string{"--json", "--jobs=12", "--states=all"}, release); !slices.Equal(got, want) {
			t.Errorf("squeue --json --jobs=12 on %q: %v, want %v", release, got, want)
		}
	}
}

// The share counts every Slurm command the process runs, through
// slurmstate's observer: the door's changes as well as the polls.
func TestRPCShareCountsCommands(t *testing.T) {
	r := newRPCShare(RPCShareSetup{Max: 0.05, Interval: time.Second}, zerolog.Nop(), func(time.Duration) {}, prometheus.NewRegistry())
	t.Cleanup(func() { slurmstate.ObserveCommands(nil) })
	bin := t.TempDir()
	for _, name := range []string{"scontrol", "squeue"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho '{}'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := actuate.SlurmRunner(bin)
	if _, err := run(context.Background(), 5*time.Second, "scontrol", "update", "JobId=12", "StartTime=now"); err != nil {
		t.Fatal(err)
	}
	if _, err := slurmstate.RunSqueueJSON(context.Background(), bin, 5*time.Second, "--jobs=12", "--states=all"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"REQUEST_UPDATE_JOB": 1, "REQUEST_FED_INFO": 1, "REQUEST_JOB_INFO_SINGLE": 1}
	if !maps.Equal(r.own, want) {
		t.Errorf("counted %v, want %v", r.own, want)
	}
	// once a poll said the release is 22.05, the one-job listing is a
	// listing of every job
	r.setRelease("22.05.8")
	if _, err := slurmstate.RunSqueueJSON(context.Background(), bin, 5*time.Second, "--jobs=12", "--states=all"); err != nil {
		t.Fatal(err)
	}
	want["REQUEST_JOB_INFO"] = 1
	if !maps.Equal(r.own, want) {
		t.Errorf("on 22.05 counted %v, want %v", r.own, want)
	}
}
