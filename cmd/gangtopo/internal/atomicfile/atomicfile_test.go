package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "map.json")
	for _, content := range []string{"first", "second"} {
		if err := Write(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	assertOnly(t, dir, "map.json")
}

func TestWriteFailureKeepsOldFile(t *testing.T) {
	boom := errors.New("disk on fire")
	tests := []struct {
		name  string
		setup func()
	}{
		{"sync fails", func() { syncFile = func(*os.File) error { return boom } }},
		{"rename fails", func() { rename = func(string, string) error { return boom } }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "map.json")
			if err := Write(p, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.setup()
			defer func() { syncFile, rename = (*os.File).Sync, os.Rename }()
			if err := Write(p, []byte("new"), 0o644); !errors.Is(err, boom) {
				t.Fatalf("Write error = %v, want it to wrap %v", err, boom)
			}
			if got, _ := os.ReadFile(p); string(got) != "old" {
				t.Errorf("after a failed write the file holds %q, want the old content", got)
			}
			assertOnly(t, dir, "map.json")
		})
	}
}

func TestWriteMissingDirectory(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "no", "such", "dir", "f"), []byte("x"), 0o644)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
}

// assertOnly checks that no temporary file was left behind.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) || (len(got) > 0 && got[0] != names[0]) {
		t.Errorf("directory holds %q, want only %q", got, names)
	}
}
