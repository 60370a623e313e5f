package publish

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultMode is the mode published files get: readable by all (slurmctld
// runs as another user), writable by the owner only.
const DefaultMode os.FileMode = 0o644

// Options change WriteFile's behaviour.
type Options struct {
	Mode             os.FileMode // 0 means DefaultMode
	AllowInsecureDir bool        // write even where others could replace the file
}

// beforeRename runs between fsync and rename; tests use it to crash there.
var beforeRename = func(tmp string) {}

// WriteFile atomically replaces path with what write produces.
func WriteFile(path string, opts Options, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if !opts.AllowInsecureDir {
		if err := CheckDir(dir); err != nil {
			return err
		}
	}
	mode := opts.Mode
	if mode == 0 {
		mode = DefaultMode
	}
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("publish %s: write %s: %w", path, tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("publish %s: fsync %s: %w", path, tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	beforeRename(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	return syncDir(dir)
}

func tempPrefix(base string) string { return "." + base + ".tmp-" }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("publish: fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("publish: fsync directory %s: %w", dir, err)
	}
	return nil
}

// CheckDir refuses a directory that someone other than this process's user
// (or root) could write, or whose ancestors could be renamed by others.
func CheckDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	uid := uint32(os.Geteuid())
	for p, first := abs, true; ; p, first = filepath.Dir(p), false {
		fi, err := os.Stat(p)
		if err != nil {
			return &DirError{fmt.Sprintf("publish: %v", err)}
		}
		if first && !fi.IsDir() {
			return fmt.Errorf("publish: %s is not a directory", p)
		}
		if err := checkOne(p, fi, uid, first); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func checkOne(p string, fi os.FileInfo, uid uint32, target bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != uid && st.Uid != 0 {
		return &DirError{fmt.Sprintf("publish: directory %s belongs to uid %d, not to us (uid %d) or root: its owner could replace what we publish (use a directory of our own)", p, st.Uid, uid)}
	}
	perm := fi.Mode().Perm()
	sticky := fi.Mode()&os.ModeSticky != 0
	if perm&0o022 != 0 && (target || !sticky) {
		return &DirError{fmt.Sprintf("publish: directory %s is writable by %s (mode %04o): others could replace what we publish (chmod go-w %s)", p, whoWrites(perm), perm, p)}
	}
	return nil
}

// DirError is CheckDir's refusal of an unsafe directory.
type DirError struct{ msg string }

func (e *DirError) Error() string { return e.msg }

func whoWrites(perm os.FileMode) string {
	var who []string
	if perm&0o020 != 0 {
		who = append(who, "its group")
	}
	if perm&0o002 != 0 {
		who = append(who, "everyone")
	}
	return strings.Join(who, " and ")
}

// CleanTemps removes temporary files a crashed writer of path left behind.
// It returns how many it removed.
func CleanTemps(path string) (int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	matches, err := filepath.Glob(filepath.Join(dir, tempPrefix(base)+"*"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range matches {
		if err := os.Remove(m); err == nil {
			n++
		}
	}
	return n, nil
}
