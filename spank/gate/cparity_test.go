package gate

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/tests/tools/ctest"
)

// The SPANK plugin (C, in sbatch) and the job_submit plugin (Go, in
// slurmctld) parse --gang-topology separately; they must accept the same
// values, canonicalise them alike and say the same thing about mistakes.
func TestOptionParserParityWithC(t *testing.T) {
	bin := ctest.Build(t)
	inputs := []string{"leaf", "LEAF:Preferred", "nvlink,slice=8", " any , slice = 4 ", "cluster", "node:required",
		"spine:preferred,slice=576", "block", "nvlnk", "", "leaf:", "leaf:sometimes", "leaf,slice=0", "leaf,slice=577",
		"leaf,slice=x", "leaf,slices=8", "leaf,slice=8,slice=4", "leaf,", "leaf:preferred:required", "leaf,slice=",
		"leaf,slice=99999999999999999999", "Spine", "any:PREFERRED"}
	cmd := exec.Command(bin, "--parse")
	cmd.Stdin = strings.NewReader(strings.Join(inputs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("C parser answered %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, in := range inputs {
		o, err := request.ParseOption(in)
		want := "ok " + o.String()
		if err != nil {
			want = "err " + err.Error()
		}
		if lines[i] != want {
			t.Errorf("%q: C says %q, Go says %q", in, lines[i], want)
		}
	}
}
