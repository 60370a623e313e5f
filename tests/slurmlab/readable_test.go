package slurmlab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// A checkout only root can read (here a 0700 directory above build/) has
// its plugins copied where every user can read them, once per lab.
func TestPluginDirCopiesWhatOthersCannotRead(t *testing.T) {
	base := openTempDir(t)
	src := filepath.Join(base, "root-only", "checkout", "build", "plugins")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.Chmod(filepath.Join(base, "root-only"), 0o700))
	for name, data := range map[string]string{"spank_gangtopo.so": "spank", "libgangtopo.so": "lib", "slurm-release": "22.05.8\n"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(data), 0o644))
	}
	must(t, os.Mkdir(filepath.Join(src, "sub"), 0o755)) // not copied
	lab := filepath.Join(base, "lab")
	must(t, os.MkdirAll(lab, 0o755))
	l := &Lab{Dir: lab}

	got, err := l.pluginDir(src)
	must(t, err)
	if want := filepath.Join(lab, "plugins", "1"); got != want {
		t.Fatalf("pluginDir = %s, want %s", got, want)
	}
	entries, err := os.ReadDir(got)
	must(t, err)
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		must(t, err)
		names = append(names, e.Name()+" "+info.Mode().String())
	}
	want := []string{"libgangtopo.so -rwxr-xr-x", "slurm-release -rwxr-xr-x", "spank_gangtopo.so -rwxr-xr-x"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("copied files (-want +got):\n%s", diff)
	}
	if data, _ := os.ReadFile(filepath.Join(got, "libgangtopo.so")); string(data) != "lib" {
		t.Errorf("libgangtopo.so holds %q, want lib", data)
	}
	if unreachable(got) != "" {
		t.Errorf("the copy %s is out of others' reach: %s", got, unreachable(got))
	}

	// once per source: a reconfigure names the same directory
	again, err := l.pluginDir(src)
	must(t, err)
	if again != got {
		t.Errorf("second pluginDir = %s, want the first copy %s", again, got)
	}
	// Slurm's own directory is used as it is
	if d, _ := l.pluginDir(StockPluginDir); d != StockPluginDir {
		t.Errorf("pluginDir(%s) = %s, want it unchanged", StockPluginDir, d)
	}
}

func TestUnreachable(t *testing.T) {
	base := openTempDir(t)
	open := filepath.Join(base, "open", "lab")
	closed := filepath.Join(base, "closed", "lab")
	must(t, os.MkdirAll(open, 0o755))
	must(t, os.MkdirAll(closed, 0o755))
	must(t, os.Chmod(filepath.Join(base, "closed"), 0o700))
	if got := unreachable(open); got != "" {
		t.Errorf("unreachable(%s) = %q, want \"\"", open, got)
	}
	if got, want := unreachable(closed), filepath.Join(base, "closed")+" (mode 0700)"; got != want {
		t.Errorf("unreachable(%s) = %q, want %q", closed, got, want)
	}
}

// openTempDir is a temporary directory every user may enter (t.TempDir
// makes its parent 0700).
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	if d := unreachable(os.TempDir()); d != "" {
		needs.Skip(t, "the temporary directory is out of others' reach: %s", d)
	}
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
