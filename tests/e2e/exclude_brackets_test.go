package e2e

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

func init() {
	register("ExcludeBracketsStayTheUsers", testExcludeBracketsStayTheUsers)
}

// testExcludeBracketsStayTheUsers: with bind_nodes: 0 a 1-GPU job that
// fills node02's hole gets the whole free nodes excluded, so Slurm does
// not break one. The user's own --exclude=node[03,16] (a comma inside
// brackets) stays excluded, neither node is recorded as gangtopo's, and
// `gangtopo unbind --clear` takes out exactly gangtopo's nodes: node03 and
// node16 stay excluded.
func testExcludeBracketsStayTheUsers(t *testing.T) {
	writeConfig(t, labConfig+"bind_nodes: 0\n")
	defer writeConfig(t, labConfig)
	reset(t)
	fill(t, map[string]int{"node01": 8, "node04": 8, "node02": 6})
	j := settle(t, submit(t, "--hold", "--gpus=1", "--cpus-per-gpu=1", "--exclude=node[03,16]"))
	d, err := jobsubmit.ParseDecision(j.AdminComment)
	must(t, err)
	// whole and free: node03 and node05-16; the user's: node03, node16
	if d.Excluded != "node[05-15]" {
		t.Errorf("decision %q: gangtopo's exclusions %q, want node[05-15]", j.AdminComment, d.Excluded)
	}
	if diff := cmp.Diff(names(t, "node[03,05-16]"), names(t, j.ExcNodes)); diff != "" {
		t.Errorf("ExcNodeList %q (-want +got):\n%s", j.ExcNodes, diff)
	}
	if out, err := gangtopo(t, "unbind", "--clear", "--config", configFile, j.ID); err != nil || !strings.Contains(out, "cleared") {
		t.Fatalf("gangtopo unbind --clear: %v\n%s", err, out)
	}
	after, err := lab.ShowJob(ctxT(t), j.ID)
	must(t, err)
	if diff := cmp.Diff(names(t, "node[03,16]"), names(t, after.ExcNodes)); diff != "" {
		t.Errorf("after unbind --clear, ExcNodeList %q (-the user's +got):\n%s", after.ExcNodes, diff)
	}
}

// names expands a host list, sorted ("" is none).
func names(t *testing.T, expr string) []string {
	t.Helper()
	if expr == "" {
		return nil
	}
	out, err := hostlist.Expand(expr)
	must(t, err)
	sort.Strings(out)
	return out
}
