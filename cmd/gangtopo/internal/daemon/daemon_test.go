package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/testlog"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The loop runs a cycle at once and then every interval; failures are
// counted and logged and do not stop it; /metrics and /healthz serve while
// it runs and /healthz turns 503 when cycles keep failing.
func TestRunLoop(t *testing.T) {
	addr := freeAddr(t)
	var logs testlog.Buffer
	d, err := New(Options{Role: "test", Interval: 50 * time.Millisecond, MetricsAddr: addr, LogFormat: "json", LogLevel: "info", Version: "v0"}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var fail atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- d.Run(ctx, func(context.Context) error {
			calls.Add(1)
			if fail.Load() {
				return errors.New("slurm is sulking")
			}
			return nil
		})
	}()
	waitUntil(t, func() bool { return calls.Load() >= 3 })
	if code, body := get(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q while cycles succeed", code, body)
	}
	_, body := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{`gangtopo_build_info{role="test",version="v0"} 1`, `gangtopo_daemon_cycles_total{result="ok"}`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	fail.Store(true)
	waitUntil(t, func() bool { return testutil.ToFloat64(d.cycles.WithLabelValues("error")) >= 4 })
	// 4 failed cycles of 50 ms: the last success is more than 3 intervals ago
	waitUntil(t, func() bool { code, _ := get(t, "http://"+addr+"/healthz"); return code == 503 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v after cancel, want nil", err)
	}
	if !strings.Contains(logs.String(), `"message":"cycle failed; what was published last stays"`) || !strings.Contains(logs.String(), "slurm is sulking") {
		t.Errorf("failure not logged:\n%s", logs.String())
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the metrics endpoint still serves after Run returned")
	}
}

func TestOnce(t *testing.T) {
	d, _ := New(Options{Role: "test", Interval: time.Hour, LogFormat: "console", LogLevel: "error", Once: true}, io.Discard)
	want := errors.New("boom")
	if err := d.Run(context.Background(), func(context.Context) error { return want }); err != want {
		t.Errorf("Run with Once = %v, want the cycle's error", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Interval: time.Second, LogFormat: "json", LogLevel: "info", MetricsAddr: ":9464"}
	tests := []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Interval = 0 }, "--interval must be positive"},
		{func(o *Options) { o.LogFormat = "xml" }, `--log-format "xml": want json or console`},
		{func(o *Options) { o.LogLevel = "loud" }, `--log-level "loud"`},
		{func(o *Options) { o.MetricsAddr = "9464" }, `--metrics-addr "9464": want host:port`},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		o := ok
		tc.mod(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("condition not reached in 4 s")
}

// With the plugin's max_snapshot_age known, a slow cycle whose next
// snapshot would land after the last expires is followed after twice its
// time, not three times.
func TestPaceKeepsSnapshotFresh(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		took, fresh, want time.Duration
	}{
		{100 * time.Millisecond, 60 * s, 5 * s}, // short cycles: the interval
		{3 * s, 60 * s, 9 * s},                  // 9 + 3 lands well within 60 s
		{8 * s, 30 * s, 16 * s},                 // 24 + 8 would not: twice its time
		{5 * s, 30 * s, 15 * s},                 // 15 + 5 lands within 30 s: three times
		{40 * s, 60 * s, 80 * s},                // too slow to keep fresh: twice its time
	} {
		if got := pace(5*s, tc.took, 0, tc.fresh); got != tc.want {
			t.Errorf("pace(5s, %v, 0, %v) = %v, want %v", tc.took, tc.fresh, got, tc.want)
		}
	}
}

func TestPace(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		interval, took time.Duration
		failures       int
		want           time.Duration
	}{
		{5 * s, 100 * time.Millisecond, 0, 5 * s}, // short cycles: the interval
		{5 * s, 5 * s / 3, 0, 5 * s},              // a third of it: still the interval
		{5 * s, 3 * s, 0, 9 * s},                  // longer: twice its time after it
		{5 * s, 40 * s, 0, 120 * s},               // a poll of a huge backlog
		{5 * s, 100 * time.Millisecond, 1, 10 * s},
		{5 * s, 100 * time.Millisecond, 3, 40 * s},
		{5 * s, 100 * time.Millisecond, 5, 50 * s}, // capped at ten intervals
		{5 * s, 100 * time.Millisecond, 60, 50 * s},
		{30 * s, s, 60, 120 * s},                 // and at two minutes
		{5 * s, 15 * s, 1, 45 * s},               // a timeout of 15 s: three times that
		{5 * time.Minute, s, 3, 5 * time.Minute}, // an interval above the cap is kept
		{50 * time.Millisecond, 0, 2, 200 * time.Millisecond},
	} {
		if got := pace(tc.interval, tc.took, tc.failures, 0); got != tc.want {
			t.Errorf("pace(%v, %v, %d) = %v, want %v", tc.interval, tc.took, tc.failures, got, tc.want)
		}
	}
}

// A period the role asks for (Space) spaces the cycles out beyond the
// interval, shows in gangtopo_daemon_cycle_period_seconds, is not logged
// as a slow cycle, and 0 gives the interval back.
func TestSpace(t *testing.T) {
	var logs testlog.Buffer
	d, err := New(Options{Role: "test", Interval: 10 * time.Millisecond, LogFormat: "json", LogLevel: "info"}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	periods := make(chan float64, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- d.Run(ctx, func(context.Context) error {
			n := calls.Add(1)
			if n > 1 {
				periods <- testutil.ToFloat64(d.nextCycle) // the period set after the cycle before
			}
			switch n {
			case 1:
				d.Space(300 * time.Millisecond)
			case 2:
				d.Space(0)
			case 3:
				cancel()
			}
			return nil
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := []float64{<-periods, <-periods}; got[0] != 0.3 || got[1] != 0.01 {
		t.Errorf("periods %v, want [0.3 0.01]: the spacing asked for, then the interval", got)
	}
	if strings.Contains(logs.String(), "cycles spaced out") {
		t.Errorf("a period asked for was logged as a slow cycle:\n%s", logs.String())
	}
}
