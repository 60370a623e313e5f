package daemon

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// With an hour's interval, a wake starts the next cycle at once (no
// sooner than MinWakeGap after the last), wakes asked for together make
// one cycle, and a wake while cycles back off asks for nothing.
func TestWake(t *testing.T) {
	d, err := New(Options{Role: "test", Interval: time.Hour, LogFormat: "json", LogLevel: "info"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	starts := make(chan time.Time, 10)
	fail := make(chan bool, 10)
	cycle := func(context.Context) error {
		starts <- time.Now()
		if len(fail) > 0 && <-fail {
			return errors.New("slurmctld is down")
		}
		return nil
	}
	go func() { _ = d.Run(ctx, cycle) }()
	first := <-starts
	if why, again := d.Wake(), d.Wake(); why != "" || again != "" {
		t.Fatalf("Wake refused with cycles succeeding: %q, %q", why, again)
	}
	second := <-starts
	if gap := second.Sub(first); gap < MinWakeGap || gap > MinWakeGap+5*time.Second {
		t.Errorf("the woken cycle started %v after the first; want %v or a little more", gap, MinWakeGap)
	}
	select {
	case s := <-starts:
		t.Errorf("two wakes made a second woken cycle (%v after the first)", s.Sub(second))
	case <-time.After(1500 * time.Millisecond):
	}
	fail <- true
	d.Wake()
	<-starts // fails: the daemon backs off
	deadline := time.Now().Add(5 * time.Second)
	for !d.backingOff.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if why := d.Wake(); why == "" {
		t.Error("Wake accepted while cycles back off")
	}
	select {
	case s := <-starts:
		t.Errorf("a cycle %v after a failed one, during the back-off", s.Sub(second))
	case <-time.After(1500 * time.Millisecond):
	}
}

// Cycles spaced out beyond the interval (the controller's RPC share)
// refuse wakes too.
func TestWakeWhileSpaced(t *testing.T) {
	d, err := New(Options{Role: "test", Interval: time.Second, LogFormat: "json", LogLevel: "info"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d.Space(3 * time.Second)
	if why := d.Wake(); why == "" {
		t.Error("Wake accepted while the cycles are spaced out")
	}
	d.Space(0)
	if why := d.Wake(); why != "" {
		t.Errorf("Wake refused without spacing: %s", why)
	}
}
