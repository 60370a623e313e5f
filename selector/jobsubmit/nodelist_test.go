package jobsubmit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// exclusionsRoundTrip checks what gangtopo adds to and takes from a job's
// exclusions on lab16: a 1-GPU job (bind_nodes: 0, so the rewrite keeps
// whole nodes whole by excluding them) whose user excluded the nodes user
// names in the spelling expr. It fails the test when gangtopo's part is not
// exactly its own nodes, at each step that touches the list:
//
//   - the rewrite: ExcNodeList is the user's nodes plus the decision's
//     excluded=, and excluded= names none of the user's;
//   - the decision line read back (what the controller and unbind see);
//   - the job as submitted again (Original, the controller's re-binding);
//   - `gangtopo unbind --clear` (WithoutNodes of excluded=).
func exclusionsRoundTrip(t *testing.T, busy map[string]int, expr string, user []string) {
	t.Helper()
	d, s := decideFixture(t, func(p *Policy) { p.BindNodes = 0 }, busy)
	j := Job{TresPerJob: "gres:gpu:1", ExcNodes: expr}
	res := decide(t, d, s, j)
	if res.Decision.Verdict != VerdictPlaced {
		return // no room: nothing written
	}
	now := res.Apply(j)
	got := set(t, now.ExcNodes)
	ours := set(t, res.Decision.Excluded)
	want := set(t, expr)
	for n := range ours {
		if want[n] {
			t.Errorf("%q: the decision counts the user's %s as gangtopo's (excluded=%s)", expr, n, res.Decision.Excluded)
		}
		want[n] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%q: ExcNodeList %q is not the user's plus gangtopo's %q (-want +got):\n%s", expr, now.ExcNodes, res.Decision.Excluded, diff)
	}
	back, err := ParseDecision(now.AdminComment)
	if err != nil || back.Excluded != res.Decision.Excluded {
		t.Fatalf("%q: the line %q reads back excluded=%q, %v", expr, now.AdminComment, back.Excluded, err)
	}
	userSet := map[string]bool{}
	for _, n := range user {
		userSet[n] = true
	}
	orig, err := Original(now, back, d.Policy().FeaturePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(userSet, set(t, orig.ExcNodes)); diff != "" {
		t.Errorf("%q: Original gives ExcNodeList %q (-user's +got):\n%s", expr, orig.ExcNodes, diff)
	}
	if back.Excluded == "" {
		return
	}
	cleared, _ := WithoutNodes(now.ExcNodes, back.Excluded)
	if diff := cmp.Diff(userSet, set(t, cleared)); diff != "" {
		t.Errorf("%q: unbind --clear leaves %q (-user's +got):\n%s", expr, cleared, diff)
	}
}

// set reads a host list into a set of names ("" is the empty set).
func set(t *testing.T, expr string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if expr == "" {
		return out
	}
	names, err := hostlist.Expand(expr)
	if err != nil {
		t.Fatalf("host list %q: %v", expr, err)
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// TestExclusionsStayTheUsers: every spelling Slurm accepts for the same
// nodes keeps exactly the user's exclusions through the rewrite, the
// decision line, Original and unbind. node02 has a 2-GPU hole, node01 and
// node04 are full: the other 13 nodes are whole and free.
func TestExclusionsStayTheUsers(t *testing.T) {
	busy := with(full("node01", "node04"), "node02", 6)
	for _, tc := range []struct {
		expr string
		user []string
	}{
		{"node[03,16]", []string{"node03", "node16"}},
		{"node[16,03]", []string{"node03", "node16"}},
		{"node03,node[16]", []string{"node03", "node16"}},
		{"node[03-05,07],node16", []string{"node03", "node04", "node05", "node07", "node16"}},
		// two bracket groups in one name: node03, node06, node13, node16
		{"node[0-1][3,6]", []string{"node03", "node06", "node13", "node16"}},
		{"node16,node[03,16]", []string{"node03", "node16"}}, // a node named twice
		{"node01", []string{"node01"}},                       // a busy node: nothing of the user's to keep whole
	} {
		t.Run(tc.expr, func(t *testing.T) { exclusionsRoundTrip(t, busy, tc.expr, tc.user) })
	}
}

// FuzzExclusionsRoundTrip: for any set of lab16's nodes the user
// excludes, in any of Slurm's spellings, on any occupancy, gangtopo adds
// and later takes out exactly its own nodes. mask picks the user's nodes
// (bit i: node i+1), fullMask the full nodes, hole the node with a 2-GPU
// hole, form the spelling.
func FuzzExclusionsRoundTrip(f *testing.F) {
	f.Add(uint16(1<<2|1<<15), uint16(1<<0|1<<3), uint8(1), uint8(0))
	f.Add(uint16(0xffff), uint16(0), uint8(5), uint8(2))
	f.Add(uint16(0x0f0f), uint16(0x00f0), uint8(9), uint8(3))
	f.Fuzz(func(t *testing.T, mask, fullMask uint16, hole, form uint8) {
		var user []string
		busy := map[string]int{}
		for i := 0; i < 16; i++ {
			name := fmt.Sprintf("node%02d", i+1)
			if mask&(1<<i) != 0 {
				user = append(user, name)
			}
			if fullMask&(1<<i) != 0 {
				busy[name] = 8
			}
		}
		if len(user) == 0 {
			return
		}
		busy[fmt.Sprintf("node%02d", int(hole)%16+1)] = 6
		exclusionsRoundTrip(t, busy, spell(user, form), user)
	})
}

// spell writes a set of nodeNN names in one of Slurm's spellings: one
// bracket list, one name per term, a bracket per name, reversed inside
// brackets, or two terms of bracket lists.
func spell(names []string, form uint8) string {
	nums := make([]string, len(names))
	for i, n := range names {
		nums[i] = strings.TrimPrefix(n, "node")
	}
	switch form % 5 {
	case 0:
		return "node[" + strings.Join(nums, ",") + "]"
	case 1:
		return strings.Join(names, ",")
	case 2:
		return "node[" + strings.Join(nums, "],node[") + "]"
	case 3:
		r := slices.Clone(nums)
		slices.Reverse(r)
		return "node[" + strings.Join(r, ",") + "]"
	}
	half := (len(nums) + 1) / 2
	out := "node[" + strings.Join(nums[:half], ",") + "]"
	if half < len(nums) {
		out += ",node[" + strings.Join(nums[half:], ",") + "]"
	}
	return out
}

// TestNodeListBound: the bound follows the cluster file, with a floor,
// and a list past it is refused before a name is built.
func TestNodeListBound(t *testing.T) {
	d, _ := decideFixture(t, nil, nil)
	// lab16: 2 x 16 = 32 is under the floor of 64
	if got := NodeListBound(d.Cluster()); got != 64 {
		t.Errorf("NodeListBound(lab16) = %d, want 64", got)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := expandNodes("--exclude", "n[0-1048574]", 64); err == nil {
			t.Fatal("2^20 names read")
		}
	})
	// the error and its message only: 2^20 names would be 2^20 allocations
	if allocs > 50 {
		t.Errorf("refusing 2^20 names took %v allocations", allocs)
	}
}
