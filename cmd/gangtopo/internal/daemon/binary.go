package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// A daemon watches the file it was started from, because what happens to
// that file says what happened to the installation under it:
//
//   - removed (dpkg -r, or rm): the package is gone, with the plugins it
//     installed beside the binary. A daemon that went on would keep acting
//     on the cluster for a gangtopo that is no longer there, so it stops
//     for good, and a controller first puts back what it holds in Slurm.
//   - replaced by another file at the same path (an upgrade: dpkg and
//     install(1) both put a new file in place, never write into the old
//     one): the daemon restarts on the new file, so that the version that
//     acts is the version installed, with or without systemd to restart it.
//
// A file that is still the one the daemon runs (same device and inode) is
// left alone.

// BinaryGone is what Run returns when the daemon's own file was removed or
// replaced.
type BinaryGone struct {
	Path     string
	Replaced bool // another file now stands at Path; false: Path is gone
}

func (e *BinaryGone) Error() string {
	if e.Replaced {
		return fmt.Sprintf("%s was replaced by a new file (an upgrade)", e.Path)
	}
	return fmt.Sprintf("%s was removed (the package removed, or the file deleted)", e.Path)
}

// Binary is the identity of the daemon's own file as it started.
type Binary struct {
	Path     string
	dev, ino uint64
}

// OwnBinary finds the file the running program was started from.
func OwnBinary() (*Binary, error) {
	path, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the daemon's own binary: %w", err)
	}
	return BinaryAt(path)
}

// BinaryAt records the identity of the file at path.
func BinaryAt(path string) (*Binary, error) {
	dev, ino, err := identity(path)
	if err != nil {
		return nil, fmt.Errorf("the daemon's own binary: %w", err)
	}
	return &Binary{Path: path, dev: dev, ino: ino}, nil
}

// Check returns nil while the file at Path is the one recorded, and a
// *BinaryGone once it was removed or replaced. Any other error (a
// directory that cannot be read) is returned as is: the file may well
// still be there, so it is no reason to stop.
func (b *Binary) Check() error {
	dev, ino, err := identity(b.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &BinaryGone{Path: b.Path}
	case err != nil:
		return err
	case dev != b.dev || ino != b.ino:
		return &BinaryGone{Path: b.Path, Replaced: true}
	}
	return nil
}

func identity(path string) (dev, ino uint64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("%s: no device and inode on this system", path)
	}
	return uint64(st.Dev), st.Ino, nil
}
