package needs

import "testing"

// recorder notes whether Skip skipped or failed, without stopping.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestSkip(t *testing.T) {
	for _, ci := range []string{"", "false", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Skip(r, "no %s", "traces")
		if want := ci == "true"; r.failed != want || r.skipped == want {
			t.Errorf("CI=%q: failed %v, skipped %v; want failed %v", ci, r.failed, r.skipped, want)
		}
	}
}
