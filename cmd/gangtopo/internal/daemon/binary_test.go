package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Run watches the daemon's own file: it stops before the next cycle once
// the file is removed or replaced, and at a stop (ctx done) it reports a
// removed file only, so that a stop for good is told apart from a restart.
func TestRunWatchesItsBinary(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path string) // while the loop runs
		cancel bool                            // then stop the loop
		want   *BinaryGone                     // nil: Run returns nil
	}{
		{"untouched, stopped", nil, true, nil},
		{"written in place (same inode), stopped", func(t *testing.T, p string) { write(t, p, "v1 patched") }, true, nil},
		{"removed", func(t *testing.T, p string) { must(t, os.Remove(p)) }, false, &BinaryGone{Replaced: false}},
		{"replaced by a new file", replace, false, &BinaryGone{Replaced: true}},
		// the stop comes before the next cycle: a replaced file is a
		// restart's business, a removed one is reported
		{"replaced, then stopped", replace, true, nil},
		{"removed, then stopped", func(t *testing.T, p string) { must(t, os.Remove(p)) }, true, &BinaryGone{Replaced: false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gangtopo")
			write(t, path, "v1")
			bin, err := BinaryAt(path)
			must(t, err)
			interval := time.Hour // only the first cycle runs unless the loop is woken
			if !tc.cancel {
				interval = 20 * time.Millisecond
			}
			d, err := New(Options{Role: "test", Interval: interval, LogFormat: "json", LogLevel: "info", Binary: bin}, io.Discard)
			must(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cycles atomic.Int32
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx, func(context.Context) error { cycles.Add(1); return nil }) }()
			waitUntil(t, func() bool { return cycles.Load() >= 1 })
			if tc.change != nil {
				tc.change(t, path)
			}
			if tc.cancel {
				cancel()
			}
			var got *BinaryGone
			select {
			case err := <-done:
				if err != nil && !errors.As(err, &got) {
					t.Fatalf("Run = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			if tc.want != nil {
				tc.want.Path = path
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run's result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBinaryGoneMessage(t *testing.T) {
	for _, tc := range []struct {
		gone BinaryGone
		want string
	}{
		{BinaryGone{Path: "/usr/bin/gangtopo"}, "/usr/bin/gangtopo was removed (the package removed, or the file deleted)"},
		{BinaryGone{Path: "/usr/bin/gangtopo", Replaced: true}, "/usr/bin/gangtopo was replaced by a new file (an upgrade)"},
	} {
		if got := tc.gone.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// replace puts a new file at path as dpkg and install(1) do: written
// beside it, renamed over it (a new inode).
func replace(t *testing.T, path string) {
	write(t, path+".dpkg-new", "v2")
	must(t, os.Rename(path+".dpkg-new", path))
}

func write(t *testing.T, path, data string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(data), 0o755))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
