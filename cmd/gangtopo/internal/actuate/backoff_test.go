package actuate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// attempt is one try of the same change, gap after the wait of the one
// before it ended (0: as soon as it ended).
type attempt struct {
	fails bool
	gap   time.Duration
}

func fails(n int) []attempt { return slices.Repeat([]attempt{{fails: true}}, n) }

// TestDoorBackoffWaits: the wait after the n-th failure in a row of one
// change, base 30 s and cap 100 s: 30 s, 60 s, then the cap (120 s is
// over it), for as long as it keeps failing; a success, or a quiet longer
// than the cap after the last wait, starts again from the base.
func TestDoorBackoffWaits(t *testing.T) {
	const base, most = 30 * time.Second, 100 * time.Second
	s := time.Second
	tests := []struct {
		name     string
		attempts []attempt
		want     []time.Duration // the wait after each attempt (0: it succeeded)
	}{
		{"doubling up to the cap", fails(5), []time.Duration{30 * s, 60 * s, 100 * s, 100 * s, 100 * s}},
		// 2^70 x 30 s overflows a Duration: the wait must stay the cap
		{"the cap after many failures", fails(72), append([]time.Duration{30 * s, 60 * s}, slices.Repeat([]time.Duration{100 * s}, 70)...)},
		{"a success starts afresh", []attempt{{fails: true}, {fails: true}, {}, {fails: true}},
			[]time.Duration{30 * s, 60 * s, 0, 30 * s}},
		// the 60 s wait ended 101 s (more than the cap) before the try
		{"a long quiet starts afresh", []attempt{{fails: true}, {fails: true}, {fails: true, gap: 101 * s}},
			[]time.Duration{30 * s, 60 * s, 30 * s}},
		// ended 100 s before: not forgotten yet
		{"a quiet of the cap does not", []attempt{{fails: true}, {fails: true}, {fails: true, gap: 100 * s}},
			[]time.Duration{30 * s, 60 * s, 100 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, now := testDoor(t, Config{Backoff: base, MaxBackoff: most}, true)
			ctx := context.Background()
			c := requeue("7")
			var got []time.Duration
			until := *now
			for i, a := range tt.attempts {
				*now = until.Add(a.gap)
				if a.fails {
					f.errs["scontrol requeue 7"] = []error{errors.New("scontrol: error: Job is not requeueable")}
				}
				d.Begin(ctx)
				_, err := d.Do(ctx, c)
				if Refused(err) || a.fails != (err != nil) {
					t.Fatalf("attempt %d: %v", i, err)
				}
				wait := time.Duration(0)
				if a.fails {
					until = d.bo.waiting(c.key(), *now)
					wait = until.Sub(*now)
					if _, err := d.Do(ctx, c); !errors.Is(err, ErrBackoff) { // within the wait: refused
						t.Fatalf("attempt %d, again at once: %v, want ErrBackoff", i, err)
					}
				}
				got = append(got, wait)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDoorBacksOffAnUnwritableAuditLog: a change whose audit line could
// not be written is backed off like one that failed: it is not tried
// again at once (every cycle) once the log can be written.
func TestDoorBacksOffAnUnwritableAuditLog(t *testing.T) {
	d, f, now := testDoor(t, Config{Backoff: 30 * time.Second}, true)
	ctx := context.Background()
	path := d.audit.Path
	d.audit.Path = "/nonexistent/dir/actions.log"
	if _, err := d.Do(ctx, requeue("7")); !errors.Is(err, ErrAudit) {
		t.Fatalf("Do: %v, want ErrAudit", err)
	}
	d.audit.Path = path
	for _, step := range []struct {
		after time.Duration
		want  error
	}{{10 * time.Second, ErrBackoff}, {25 * time.Second, nil}} { // at 10 s, then 35 s
		*now = now.Add(step.after)
		d.Begin(ctx)
		if _, err := d.Do(ctx, requeue("7")); !errors.Is(err, step.want) {
			t.Errorf("at +%s: %v, want %v", step.after, err, step.want)
		}
	}
	if len(f.ran) != 1 {
		t.Errorf("ran %q, want once, after the wait", f.ran)
	}
}

// TestDoorSetConfigBackoff: a reloaded gangtopo.yaml's back-off applies to
// the next failure, and what is backed off stays so.
func TestDoorSetConfigBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		reload    Config
		failAfter bool          // the change fails again after the reload
		want      time.Duration // the wait after the last failure
	}{
		// the first failure waited 30 s; kept across the reload
		{"the wait in force is kept", Config{Backoff: 5 * s, MaxBackoff: 5 * s}, false, 30 * s},
		// the second failure in a row: 2 x 10 s, within the new cap
		{"the new base for the next failure", Config{Backoff: 10 * s, MaxBackoff: time.Minute}, true, 20 * s},
		// 2 x 40 s, capped at the base (a cap below the base is the base)
		{"the new cap for the next failure", Config{Backoff: 40 * s}, true, 40 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, now := testDoor(t, Config{Backoff: 30 * s, MaxBackoff: 2 * time.Minute}, true)
			ctx := context.Background()
			c := requeue("7")
			f.errs["scontrol requeue 7"] = []error{errors.New("boom"), errors.New("boom")}
			if _, err := d.Do(ctx, c); err == nil || Refused(err) {
				t.Fatalf("first: %v", err)
			}
			d.SetConfig(tt.reload)
			if tt.failAfter {
				*now = d.bo.waiting(c.key(), *now)
				d.Begin(ctx)
				if _, err := d.Do(ctx, c); err == nil || Refused(err) {
					t.Fatalf("after the reload: %v", err)
				}
			}
			if got := d.bo.waiting(c.key(), *now).Sub(*now); got != tt.want {
				t.Errorf("wait %s, want %s", got, tt.want)
			}
		})
	}
}
