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
		if len(field) != 6 {
			t.Fatalf("%s:%d: %q does not have 6 fields", path, line, text)
		}
		edit := func(c *Policy) {
			c.Partitions = request.SplitList(field[0])
			c.Jobs = ScopeGang
			if field[4] == "1" {
				c.Jobs = ScopeGPU
			}
		}
		d, _ := decideFixture(t, edit, nil)
		j := Job{Partition: field[1], GangTopology: field[2], TresPerJob: field[3]}
		if j.Partition == "-" {
			j.Partition = ""
		}
		_, got, _ := d.scope(j)
		if want := field[5] == "1"; got != want {
			t.Errorf("%s:%d: partitions %q, job in %q, --gang-topology %q, tres %q, jobs_gpu %s: in scope %v, want %v",
				path, line, field[0], field[1], field[2], field[3], field[4], got, want)
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
