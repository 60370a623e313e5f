package publish

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.json")
	for _, content := range []string{"first\n", "second\n"} {
		if err := WriteFile(path, Options{}, func(w io.Writer) error { _, err := io.WriteString(w, content); return err }); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Errorf("content %q, want %q", got, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want just the file", len(entries))
	}
}

// A write that fails leaves the old file as it was and no temporary file.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.json")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, Options{}, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("half a snapshot ", 1000))
		return errors.New("encoder gave up")
	})
	if err == nil || !strings.Contains(err.Error(), "encoder gave up") {
		t.Fatalf("error = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("old file now %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary file left behind: %d entries", len(entries))
	}
}

const crashEnv = "GANGTOPO_PUBLISH_CRASH"

// TestCrashHelper is not a test: it is the publisher process the crash
// tests start and kill. It publishes a snapshot of generation 2, pausing
// (and announcing it) either in the middle of writing or after the fsync,
// just before the rename.
func TestCrashHelper(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("helper process for the crash tests")
	}
	where, path, _ := strings.Cut(spec, ":")
	pause := func() {
		os.WriteFile(path+".paused", nil, 0o644)
		time.Sleep(time.Minute)
	}
	s := occupancy.New(topotest.Lab16())
	s.Generation = 2
	if where == "before-rename" {
		beforeRename = func(string) { pause() }
	}
	WriteFile(path, Options{}, func(w io.Writer) error {
		if err := s.Encode(w, "crash"); err != nil {
			return err
		}
		if where == "mid-write" {
			w.(interface{ Flush() error }).Flush() // half-written bytes really on disk
			pause()
		}
		return nil
	})
	os.Exit(0)
}

// A publisher killed mid-write, or between write and rename, leaves the
// previous snapshot intact and readable; CleanTemps clears its debris.
func TestKilledPublisherKeepsPreviousSnapshot(t *testing.T) {
	c := topotest.Lab16()
	for _, where := range []string{"mid-write", "before-rename"} {
		t.Run(where, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snapshot.json")
			old := occupancy.New(c)
			old.Generation = 1
			if err := WriteSnapshot(path, old, "test", Options{}); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
			cmd.Env = append(os.Environ(), crashEnv+"="+where+":"+path)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, path+".paused")
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s, err := occupancy.Decode(f, path, c)
			if err != nil || s.Generation != 1 {
				t.Fatalf("after the kill: generation %v, %v; want the intact generation 1", s, err)
			}
			if n, err := CleanTemps(path); n != 1 || err != nil {
				t.Errorf("CleanTemps removed %d, %v; want the killed writer's temporary file", n, err)
			}
		})
	}
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("the helper never reached %s", path)
}

func TestCheckDir(t *testing.T) {
	tests := []struct {
		mode os.FileMode
		want string
	}{
		{0o755, ""},
		{0o700, ""},
		{0o775, "is writable by its group (mode 0775)"},
		{0o777, "is writable by its group and everyone (mode 0777)"},
		{0o1777, "is writable by its group and everyone (mode 0777)"}, // sticky protects files, not the directory's own entries
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%04o", tc.mode), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			os.Mkdir(dir, 0o700)
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(filepath.Join(dir, "f"), Options{}, func(w io.Writer) error { return nil })
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
			if err := WriteFile(filepath.Join(dir, "f"), Options{AllowInsecureDir: true}, func(w io.Writer) error { return nil }); err != nil {
				t.Errorf("with AllowInsecureDir: %v", err)
			}
		})
	}
}

// A directory below a shared, non-sticky one could be renamed away by
// anyone; one owned by another user could be written by that user.
func TestCheckDirAncestorsAndOwner(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	own := filepath.Join(shared, "own")
	os.MkdirAll(own, 0o755)
	os.Chmod(shared, 0o777)
	if err := CheckDir(own); err == nil || !strings.Contains(err.Error(), "shared is writable by its group and everyone") {
		t.Errorf("CheckDir below a shared directory = %v", err)
	}
	if os.Geteuid() != 0 {
		needs.Skip(t, "changing a directory's owner needs root")
	}
	other := filepath.Join(t.TempDir(), "other")
	os.Mkdir(other, 0o755)
	if err := os.Chown(other, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(other); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") {
		t.Errorf("CheckDir of another user's directory = %v", err)
	}
}

func TestGenerations(t *testing.T) {
	now := time.UnixMilli(1_796_199_159_000)
	if got := NextGeneration(0, now); got != 1_796_199_159_000 {
		t.Errorf("NextGeneration(0) = %d, want the time in ms", got)
	}
	// a previous generation ahead of the clock (it went backwards): still +1
	if got := NextGeneration(1_796_199_160_000, now); got != 1_796_199_160_001 {
		t.Errorf("NextGeneration(ahead) = %d", got)
	}
	path := filepath.Join(t.TempDir(), "s.json")
	if h, err := ReadHeader(path); h != (Header{}) || err != nil {
		t.Errorf("ReadHeader(missing) = %v, %v", h, err)
	}
	s := occupancy.New(topotest.Lab16())
	s.Generation, s.Time = 77, now.UTC()
	if err := WriteSnapshot(path, s, "t", Options{}); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHeader(path); h != (Header{77, now.UTC()}) || err != nil {
		t.Errorf("ReadHeader = %v, %v; want generation 77 at %v", h, err, now)
	}
	for _, bad := range []string{"garbage", `{"version":"v1"}`, `{"generation":"7"}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadHeader(path); err == nil {
			t.Errorf("ReadHeader(%s) succeeded", bad)
		}
	}
}
