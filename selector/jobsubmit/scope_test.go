package jobsubmit

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/request"
)

// The shim decides scope itself when Go does not answer in time
// (c/gangtopo_scope.c); it and Decider.scope must agree on every case of the
// file both tests read.
func TestScopeCases(t *testing.T) {
	const path = "../../c/tests/scope_cases.txt"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		field := strings.Split(text, "|")
		if len(field) != 7 {
			t.Fatalf("%s:%d: %q does not have 7 fields", path, line, text)
		}
		edit := func(c *Policy) {
			c.Partitions = request.SplitList(field[0])
			c.Jobs = ScopeGang
			if field[5] == "1" {
				c.Jobs = ScopeGPU
			}
		}
		d, _ := decideFixture(t, edit, nil)
		none := func(s string) string {
			if s == "-" {
				return ""
			}
			return s
		}
		j := Job{Partition: none(field[1]), DefaultPartition: none(field[2]), GangTopology: field[3], TresPerJob: field[4]}
		_, got, _ := d.scope(j)
		if want := field[6] == "1"; got != want {
			t.Errorf("%s:%d: partitions %q, job in %q (default %q), --gang-topology %q, tres %q, jobs_gpu %s: in scope %v, want %v",
				path, line, field[0], field[1], field[2], field[3], field[4], field[5], got, want)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("%s: only %d cases", path, n)
	}
}
