package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// fake records failures without stopping.
type fake struct {
	testing.TB
	errors, fatals int
}

func (f *fake) Helper()               {}
func (f *fake) Errorf(string, ...any) { f.errors++ }
func (f *fake) Fatalf(string, ...any) { f.fatals++ }
func (f *fake) Fatal(...any)          { f.fatals++ }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	f := &fake{TB: t}
	Check(f, path, []byte("x\n"))
	if f.fatals != 1 {
		t.Errorf("missing golden file: %d fatal errors, want 1", f.fatals)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f = &fake{TB: t}
	Check(f, path, []byte("x\n"))
	if f.errors+f.fatals != 0 {
		t.Errorf("equal output: %d errors", f.errors+f.fatals)
	}
	Check(f, path, []byte("y\n"))
	if f.errors != 1 {
		t.Errorf("different output: %d errors, want 1", f.errors)
	}

	*update = true
	defer func() { *update = false }()
	f = &fake{TB: t}
	Check(f, filepath.Join(filepath.Dir(path), "new", "out.txt"), []byte("z\n"))
	if got, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "new", "out.txt")); string(got) != "z\n" || f.errors+f.fatals != 0 {
		t.Errorf("-update wrote %q with %d errors", got, f.errors+f.fatals)
	}
}
