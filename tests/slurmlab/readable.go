package slurmlab

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// What other users read. The lab's Slurm commands run as other users too
// (the tests submit and update jobs as nobody: Lab.RunAs), and every such
// command reads slurm.conf's PluginDir and loads the SPANK plugin. From a
// checkout only root can read (a clone in /root, any directory of mode
// 0700 above it) the plugin builds under build/ are out of their reach:
// sbatch failed with "PluginDir: .../build/plugins: Permission denied". So
// the lab loads gangtopo's plugins from a copy in its own directory, which
// every user can read, and says at start, in one line, when its directory
// itself is out of other users' reach (a TMPDIR inside such a directory);
// RunAs then fails saying the same.

// pluginDir is the directory the lab's configuration names for the plugins
// of dir: a copy under <lab>/plugins, made once per lab and source
// directory, or dir itself where it is Slurm's own (Debian's plugin
// directory, or a directory of a Debian root that a package installed).
func (l *Lab) pluginDir(dir string) (string, error) {
	if dir == "" || dir == StockPluginDir || l.rootOwn(dir) {
		return dir, nil
	}
	if cp, ok := l.pluginCopies[dir]; ok {
		return cp, nil
	}
	cp := l.Path("plugins", strconv.Itoa(len(l.pluginCopies)+1))
	if err := copyFiles(dir, cp); err != nil {
		return "", fmt.Errorf("copying the plugins where every user can read them: %w", err)
	}
	if l.pluginCopies == nil {
		l.pluginCopies = map[string]string{}
	}
	l.pluginCopies[dir] = cp
	return cp, nil
}

// rootOwn reports whether dir is a directory of the lab's Debian root
// rather than a host path bound into it.
func (l *Lab) rootOwn(dir string) bool {
	if l.opts.Root == "" || l.isExposed(filepath.Clean(dir), l.exposed()) {
		return false
	}
	_, err := os.Stat(filepath.Join(l.opts.Root, dir))
	return err == nil
}

// copyFiles copies the regular files of src (not its subdirectories) into
// dst, readable by all. Each file is written beside its final name and
// renamed over it, so a process that has the old one mapped keeps it.
func copyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// unreachable names the first directory on the way to dir that other
// users cannot enter (no execute bit for others), or "" when they can.
func unreachable(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Sprintf("%s (mode %04o)", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
