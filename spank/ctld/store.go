package ctld

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Store keeps the occupancy snapshot a job_submit call places against.
//
// The snapshot file is read in the background (Run, every ReloadInterval),
// never inside a call: slurmctld holds its locks while job_submit runs, so
// the call only takes the already-decoded snapshot (Acquire). A reload
// costs a stat when nothing changed; a changed file whose generation is the
// one loaded is not decoded again.
//
// On top of the snapshot the store keeps the allocations of its own recent
// decisions (Hold): a job placed a second ago has not started yet, or the
// next snapshot does not show it, and without this a burst of submissions
// would all be sent to the same free GPUs. A decision stays applied to
// every snapshot taken less than PendingHold after it, and is dropped when
// it no longer fits (the snapshot shows its GPUs taken, by it or another
// job), or when its job is gone (held.go).
type Store struct {
	cfg     Config
	cluster *topology.Cluster
	trusted map[uint32]bool

	mu      sync.Mutex
	cur     *occupancy.Snapshot // last good snapshot; nil if none usable
	stamp   fileStamp
	loadErr error               // why there is no usable snapshot
	work    *occupancy.Snapshot // cur plus held decisions
	held    []heldAlloc
	shared  bool     // work may still be read by a placement past its deadline
	mix     storeMix // the request mix in force and its engine (mix.go)

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// fileStamp identifies a version of a file without reading it.
type fileStamp struct {
	mtime time.Time
	size  int64
	ino   uint64
	mode  os.FileMode
	uid   uint32
}

// NewStore returns a store for cluster c; call Refresh or Run to load.
func NewStore(cfg Config, c *topology.Cluster) *Store {
	return &Store{cfg: cfg, cluster: c, trusted: trustedUIDs(cfg),
		loadErr: errors.New("snapshot not loaded yet"), stop: make(chan struct{}), done: make(chan struct{})}
}

func trustedUIDs(cfg Config) map[uint32]bool {
	t := map[uint32]bool{0: true, uint32(os.Geteuid()): true}
	for _, u := range cfg.TrustedUIDs {
		t[uint32(u)] = true
	}
	return t
}

// Run reloads the snapshot every ReloadInterval until Stop. Errors are kept
// for Acquire to report; logf (may be nil) hears about changes.
func (s *Store) Run(logf func(string)) {
	defer close(s.done)
	t := time.NewTicker(s.cfg.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if msg := s.safeRefresh(); msg != "" && logf != nil {
				logf(msg)
			}
		}
	}
}

// Stop ends Run and waits for it (if it was started).
func (s *Store) Stop(started bool) {
	s.stopOnce.Do(func() { close(s.stop) })
	if started {
		<-s.done
	}
}

// safeRefresh is Refresh for the background goroutine: a panic there
// would take slurmctld down with it, so it becomes a logged failure (the
// snapshot is then unusable until the next good load).
func (s *Store) safeRefresh() (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = s.fail(fileStamp{}, fmt.Errorf("internal error loading the snapshot: %v", r))
		}
	}()
	return s.Refresh()
}

// Refresh checks the snapshot file and loads it if it changed. It returns
// a line worth logging when the state changed (loaded, or became
// unusable), else "".
//
// The file is opened first and everything is checked on the open file
// (fstat), so the file whose owner and mode were checked is the one read:
// a stat before the open would leave a window to swap it.
func (s *Store) Refresh() string {
	path := s.cfg.Snapshot
	f, fi, err := openChecked("snapshot", path, s.trusted)
	if err != nil {
		return s.fail(fileStamp{}, err)
	}
	defer f.Close()
	st := stampOf(fi)
	s.mu.Lock()
	same := st == s.stamp
	s.mu.Unlock()
	if same {
		return ""
	}
	snap, err := s.load(f, path, fi)
	if err != nil {
		return s.fail(st, err)
	}
	if snap == nil { // same generation rewritten
		s.mu.Lock()
		s.stamp = st
		s.mu.Unlock()
		return ""
	}
	mix := s.prepareMix(snap)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.stamp, s.loadErr = snap, st, nil
	s.applyMixLocked(mix)
	s.rebuild()
	msg := fmt.Sprintf("snapshot %s generation %d loaded (taken %s)", path, snap.Generation, snap.Time.Format(time.RFC3339))
	if mix != nil && snap.Mix != nil {
		msg += "; " + mix.msg
	}
	return msg
}

// fail records why no snapshot is usable; a corrupt or untrusted file
// drops the previous snapshot too, since it no longer describes the
// cluster.
func (s *Store) fail(st fileStamp, err error) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.loadErr == nil || s.loadErr.Error() != err.Error()
	s.cur, s.work, s.stamp, s.loadErr = nil, nil, st, err
	if changed {
		return err.Error()
	}
	return ""
}

// load reads and decodes the open, checked file; nil, nil means the
// generation is the one already loaded.
func (s *Store) load(f *os.File, path string, fi os.FileInfo) (*occupancy.Snapshot, error) {
	data, err := io.ReadAll(io.LimitReader(f, occupancy.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	meta, err := occupancy.DecodeMeta(bytes.NewReader(data), path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur != nil && meta.Generation != 0 && meta.Generation == cur.Generation && meta.Time.Equal(cur.Time) {
		return nil, nil
	}
	snap, err := occupancy.Decode(bytes.NewReader(data), path, s.cluster)
	if err != nil {
		return nil, err
	}
	if snap.Time.IsZero() {
		snap.Time = fi.ModTime()
	}
	return snap, nil
}

// openChecked opens a file the plugin trusts (what names it, the
// snapshot, the cluster file, gangtopo.yaml) and checks it on the open
// file: a regular file (opened without blocking, so a FIFO put there is
// refused instead of stalling the reader), owned by a trusted user,
// writable by nobody else. The caller closes it.
func openChecked(what, path string, trusted map[uint32]bool) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", what, path, errors.Unwrap(err))
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s %s is not a regular file (%v): refused", what, path, fi.Mode().Type())
	}
	if err == nil {
		err = checkTrusted(path, fi, trusted)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// checkTrusted refuses a file someone untrusted could have written: the
// owner must be in trusted (root, the process's own user, trusted_uids) or
// be slurm.conf's SlurmUser (slurmuser.go), and neither group nor others
// may write it.
func checkTrusted(path string, fi os.FileInfo, trusted map[uint32]bool) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %04o): refused; make it 0644", path, fi.Mode().Perm())
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || trusted[sys.Uid] {
		return nil
	}
	if slurm, name := isSlurmUser(sys.Uid); slurm {
		return nil
	} else if name != "" {
		return fmt.Errorf("%s is owned by uid %d, which is not root, SlurmUser (%s) or in trusted_uids: refused", path, sys.Uid, name)
	}
	return fmt.Errorf("%s is owned by uid %d, which is not root, slurmctld's user or in trusted_uids: refused", path, sys.Uid)
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{mtime: fi.ModTime(), size: fi.Size(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.uid = sys.Ino, sys.Uid
	}
	return st
}

// SnapInfo describes the snapshot a decision used, for the decision text.
type SnapInfo struct {
	Generation uint64
	Age        time.Duration
	// MixVersion counts the changes of the request mix the engine should
	// measure against (see mix.go).
	MixVersion uint64
}

// Acquire returns the snapshot to place against (with held decisions
// applied), or why there is none: not loaded, unreadable, corrupt,
// untrusted, or older than MaxSnapshotAge. The caller holds the store until
// Release; job_submit calls are serial anyway.
func (s *Store) Acquire(now time.Time) (*occupancy.Snapshot, SnapInfo, error) {
	s.mu.Lock()
	if s.loadErr != nil {
		err := s.loadErr
		s.mu.Unlock()
		return nil, SnapInfo{}, err
	}
	info := SnapInfo{Generation: s.cur.Generation, Age: now.Sub(s.cur.Time), MixVersion: s.mix.version}
	if info.Age > s.cfg.MaxSnapshotAge {
		s.mu.Unlock()
		return nil, info, fmt.Errorf("snapshot %s is stale: taken %v ago, bound %v (is the gangtopo daemon running?)",
			s.cfg.Snapshot, info.Age.Round(time.Second), s.cfg.MaxSnapshotAge)
	}
	if s.shared {
		s.work, s.shared = s.work.Clone(), false
	}
	return s.work, info, nil
}

// Release ends an Acquire. abandoned says a placement may still be
// reading the snapshot (it ran past its deadline): the next Acquire works
// on a copy.
func (s *Store) Release(abandoned bool) {
	s.shared = s.shared || abandoned
	s.mu.Unlock()
}

// Current returns the last good snapshot as loaded (without held
// decisions), whatever its age, or nil: job_modify reads its bindings,
// which an old snapshot still knows best.
func (s *Store) Current() *occupancy.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}
