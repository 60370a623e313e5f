package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The parsers of what reaches the decision from outside: the TRES strings
// of a job, and decision lines read back by gangtopo why. Neither may
// panic; a decision that parses must render back to itself.

func FuzzParseGPUTres(f *testing.F) {
	for _, s := range []string{"gres:gpu:h100:16", "gres:gpu", "gres/gpu=4", "gres:nic:1,gres:gpu:2", "gres:gpu:a:b:c", "gpu:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g, ok, err := parseGPUTres(in)
		if err == nil && ok && g.Count < 0 {
			t.Errorf("%q: negative count %d", in, g.Count)
		}
	})
}

func FuzzParseDecision(f *testing.F) {
	f.Add("gangtopo v1 placed request=leaf:required gpus=32 shape=4x8 domain=leaf4 tier=leaf bound=leaf4,leaf3 snapshot=42: text")
	f.Add("gangtopo v1 untouched: snapshot missing")
	f.Add("gangtopo v1 placed gpus=2 bound=node02 excluded=node[03,16] snapshot=4 hold=0a1b2c3d4e5f: text")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ParseDecision(in)
		if err != nil || strings.ContainsAny(in, "\n\r\t") {
			return
		}
		again, err := ParseDecision(d.String())
		if err != nil {
			t.Fatalf("%q renders to %q, which does not parse: %v", in, d.String(), err)
		}
		if diff := cmp.Diff(d, again); diff != "" && d.Text == strings.TrimSpace(d.Text) {
			t.Errorf("%q: round trip (-first +second):\n%s", in, diff)
		}
	})
}

// FuzzArrayTasks: a job array's task list (sbatch --array, squeue's
// array_task_string) never panics, and a list that parses counts at least
// one task and no more than its indices allow.
func FuzzArrayTasks(f *testing.F) {
	for _, s := range []string{"0-49%5", "1,3,5-11:2", "7", "0-9,5-14", "0-4194304", "9-3", "%", "0-1:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tasks, limit, err := ArrayTasks(in)
		if err != nil {
			return
		}
		if tasks < 1 || tasks > maxArrayIndex+1 || limit < 0 {
			t.Errorf("%q: %d tasks, limit %d", in, tasks, limit)
		}
	})
}
