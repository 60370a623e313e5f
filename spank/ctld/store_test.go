package ctld

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// storeFixture is a store over topotest.Lab16 (16 nodes x 8 GPUs) with its
// snapshot file in a temporary directory.
type storeFixture struct {
	t     *testing.T
	c     *topology.Cluster
	path  string
	store *Store
	// holds are the pending holds the next snapshot lists (nil: it does
	// not list pending jobs)
	holds map[string]bool
}

func newStoreFixture(t *testing.T) *storeFixture {
	t.Helper()
	c := topotest.Lab16()
	cfg := Defaults()
	cfg.Snapshot = filepath.Join(t.TempDir(), "snapshot.json")
	return &storeFixture{t: t, c: c, path: cfg.Snapshot, store: NewStore(cfg, c)}
}

// write publishes a snapshot of generation gen, taken at `at`, with the
// first `used` GPUs of node01 taken by one job.
func (f *storeFixture) write(gen uint64, at time.Time, used int) {
	f.t.Helper()
	s := occupancy.New(f.c)
	s.Generation, s.Time, s.PendingHolds = gen, at, f.holds
	if used > 0 {
		var gpus []int
		for i := 0; i < used; i++ {
			gpus = append(gpus, i)
		}
		if err := s.AddJob(occupancy.Job{ID: "1", Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: 0, GPUs: gpus, Milli: 1000}}}}); err != nil {
			f.t.Fatal(err)
		}
	}
	tmp := f.path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Encode(out, "test"); err != nil {
		f.t.Fatal(err)
	}
	out.Close()
	if err := os.Rename(tmp, f.path); err != nil {
		f.t.Fatal(err)
	}
}

// freeOnNode01 acquires the snapshot and counts node01's whole free GPUs.
func (f *storeFixture) freeOnNode01(now time.Time) (int, error) {
	s, _, err := f.store.Acquire(now)
	if err != nil {
		return 0, err
	}
	defer f.store.Release(false)
	return s.WholeFree(0), nil
}

func TestStoreLoadsAndReloadsOnChange(t *testing.T) {
	f := newStoreFixture(t)
	now := time.Now()
	if _, err := f.freeOnNode01(now); err == nil || !strings.Contains(err.Error(), "not loaded yet") {
		t.Fatalf("before any load: %v", err)
	}
	f.write(1, now, 2)
	if msg := f.store.Refresh(); !strings.Contains(msg, "generation 1 loaded") {
		t.Errorf("first load logged %q", msg)
	}
	if msg := f.store.Refresh(); msg != "" {
		t.Errorf("unchanged file logged %q", msg)
	}
	if free, err := f.freeOnNode01(now); err != nil || free != 6 {
		t.Errorf("gen 1: node01 free %d, %v; want 6 (8 - 2 used)", free, err)
	}
	f.write(2, now, 5)
	f.store.Refresh()
	if free, err := f.freeOnNode01(now); err != nil || free != 3 {
		t.Errorf("gen 2: node01 free %d, %v; want 3", free, err)
	}
}

func TestStoreRefusesBadSnapshots(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		spoil func(f *storeFixture)
		want  string
	}{
		{"missing", func(f *storeFixture) { os.Remove(f.path) }, "no such file or directory"},
		{"corrupt", func(f *storeFixture) { os.WriteFile(f.path, []byte(`{"version": "v1", "nodes": [`), 0o644) }, "unexpected EOF"},
		{"unknown node", func(f *storeFixture) {
			os.WriteFile(f.path, []byte(`{"version":"v1","cluster":"lab16","generation":9,"time":"2030-01-01T00:00:00Z","nodes":[{"name":"nodeX","state":"idle"}]}`), 0o644)
		}, `unknown node "nodeX"`},
		{"writable by others", func(f *storeFixture) { os.Chmod(f.path, 0o666) }, "writable by group or others (mode 0666): refused"},
		{"stale", func(f *storeFixture) { f.write(3, now.Add(-2*time.Minute), 0) }, "is stale: taken 2m0s ago, bound 1m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newStoreFixture(t)
			f.write(1, now, 0)
			f.store.Refresh()
			tc.spoil(f)
			f.store.Refresh()
			if _, err := f.freeOnNode01(now); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A decision's GPUs stay taken until a snapshot late enough to show the job
// arrives; then the snapshot alone counts.
func TestStoreHoldsRecentDecisions(t *testing.T) {
	f := newStoreFixture(t)
	t0 := time.Now()
	f.write(1, t0, 0)
	f.store.Refresh()
	alloc := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: 0, GPUs: []int{0, 1, 2, 3}, Milli: 1000}}}
	if _, _, err := f.store.Acquire(t0); err != nil {
		t.Fatal(err)
	}
	f.store.HoldLocked(alloc, t0, "")
	f.store.Release(false)
	if free, _ := f.freeOnNode01(t0); free != 4 {
		t.Errorf("after the decision: node01 free %d, want 4 (8 - 4 held)", free)
	}
	// a snapshot 1 s later does not show the job yet: still held
	f.write(2, t0.Add(time.Second), 0)
	f.store.Refresh()
	if free, _ := f.freeOnNode01(t0.Add(time.Second)); free != 4 {
		t.Errorf("snapshot 1s later: node01 free %d, want 4 (held)", free)
	}
	// a snapshot 11 s later (past PendingHold, 10 s) is trusted alone
	f.write(3, t0.Add(11*time.Second), 0)
	f.store.Refresh()
	if free, _ := f.freeOnNode01(t0.Add(11 * time.Second)); free != 8 {
		t.Errorf("snapshot 11s later: node01 free %d, want 8 (hold expired)", free)
	}
}

// refreshWithin runs Refresh and fails the test if it does not return in
// time: a reader that blocks stalls the reload goroutine for good.
func refreshWithin(t *testing.T, s *Store, d time.Duration) string {
	t.Helper()
	done := make(chan string, 1)
	go func() { done <- s.Refresh() }()
	select {
	case msg := <-done:
		return msg
	case <-time.After(d):
		t.Fatalf("Refresh still blocked after %v", d)
		return ""
	}
}

// The snapshot file is opened without blocking and checked on the open
// file (fstat): a FIFO in its place is refused at once (opening one for
// reading waits for a writer), a directory too, and a file of a user
// outside trusted_uids as well.
func TestStoreChecksTheOpenFile(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		rootOnly bool
		spoil    func(f *storeFixture) error
		want     string
	}{
		{"fifo", false, func(f *storeFixture) error {
			os.Remove(f.path)
			return syscall.Mkfifo(f.path, 0o644)
		}, "is not a regular file (p---------): refused"},
		{"directory", false, func(f *storeFixture) error {
			os.Remove(f.path)
			return os.Mkdir(f.path, 0o755)
		}, "is not a regular file (d---------): refused"},
		{"foreign owner", true, func(f *storeFixture) error { return os.Chown(f.path, 12345, 12345) },
			"is owned by uid 12345, which is not root, slurmctld's user or in trusted_uids: refused"},
	}
	t.Setenv("SLURM_CONF", filepath.Join(t.TempDir(), "no-slurm.conf")) // no SlurmUser to trust
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rootOnly && os.Geteuid() != 0 {
				needs.Skip(t, "giving a file to another user needs root")
			}
			f := newStoreFixture(t)
			f.write(1, now, 0)
			f.store.Refresh()
			if err := tc.spoil(f); err != nil {
				t.Fatal(err)
			}
			refreshWithin(t, f.store, 5*time.Second)
			if _, err := f.freeOnNode01(now); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
