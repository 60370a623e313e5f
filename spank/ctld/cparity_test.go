package ctld

import (
	"encoding/hex"
	"os/exec"
	"strconv"
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
		"leaf,slice=99999999999999999999", "Spine", "any:PREFERRED",
		// control characters in every part the messages name: quoted alike
		"le\naf", "LEAF\x1b", "leaf:\rrequired", "leaf: some\ttimes ", "leaf,colour\n=1", "leaf,slice=1\nFAKE",
		"leaf,slice=\x7f", "leaf, slice = 8\x01", "\"quoted\"", `back\slash`}
	var in strings.Builder
	for _, s := range inputs {
		in.WriteString(hex.EncodeToString([]byte(s)) + "\n")
	}
	cmd := exec.Command(bin, "--parse")
	cmd.Stdin = strings.NewReader(in.String())
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

// When Go does not answer, the shim logs the job's name itself; it must
// quote it as Go's %q does (Gate.failure), so that a name cannot forge
// log lines and both sides' lines read alike. ASCII only: bytes from 0x80
// are copied as they are by the shim.
func TestQuoteParityWithC(t *testing.T) {
	bin := ctest.Build(t)
	inputs := []string{"wrap", "", "train \"big\"", `C:\path`, "a\nJobId=1 gangtopo v1 placed", "\t\r\v\f\a\b", "\x01\x1f\x7f",
		"name with spaces", "x=1,y=2", "%s%n"}
	var all string
	for c := 1; c < 0x80; c++ {
		all += string(rune(c))
	}
	inputs = append(inputs, all)
	var in strings.Builder
	for _, s := range inputs {
		in.WriteString(hex.EncodeToString([]byte(s)) + "\n")
	}
	cmd := exec.Command(bin, "--quote")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("C answered %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, s := range inputs {
		if want := strconv.Quote(s); lines[i] != want {
			t.Errorf("%q: C quotes it %s, Go %s", s, lines[i], want)
		}
	}
}
