package jobsubmit

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// decideFixture is a decider over topotest.Lab16 (node01..node16, 8 H100
// each, leaf1 = node01-04 ... leaf4 = node13-16, spine1 = leaf1-2, spine2 =
// leaf3-4) under the policy of jobs: gpu, and a snapshot in which `busy`
// maps node names to GPUs in use.
func decideFixture(t *testing.T, edit func(*Policy), busy map[string]int) (*Decider, *occupancy.Snapshot) {
	t.Helper()
	c := topotest.Lab16()
	p := DefaultPolicy()
	p.Jobs = ScopeGPU
	if edit != nil {
		edit(&p)
	}
	d, err := New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(c)
	for name, k := range busy {
		id, ok := c.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		var gpus []int
		for i := 0; i < k; i++ {
			gpus = append(gpus, i)
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	return d, s
}

// decide runs every stage with a fresh engine, as the simulators do.
func decide(t *testing.T, d *Decider, s *occupancy.Snapshot, j Job) Result {
	t.Helper()
	res, err := d.Decide(j, s, 7, place.New(d.Cluster(), place.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// full lists whole nodes in use.
func full(names ...string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n] = 8
	}
	return m
}

func with(m map[string]int, name string, k int) map[string]int {
	m[name] = k
	return m
}

// rewrite is the part of a Result the tests compare.
type rewrite struct {
	Action                                              Action
	Verdict                                             Verdict
	Features, Prefer, ExcNodes, TresPerJob, TresPerNode string
	MinNodes, MaxNodes                                  uint32
	Domain, Shape                                       string
	Excluded                                            string // what the decision says gangtopo excluded
	ErrMsg                                              string
}

func summarize(r Result) rewrite {
	s := func(p *string) string {
		if p == nil {
			return "<unchanged>"
		}
		return *p
	}
	return rewrite{Action: r.Action, Verdict: r.Decision.Verdict, Features: s(r.Features), Prefer: s(r.Prefer),
		ExcNodes: s(r.ExcNodes), TresPerJob: s(r.TresPerJob), TresPerNode: s(r.TresPerNode),
		MinNodes: r.MinNodes, MaxNodes: r.MaxNodes, Domain: r.Decision.Domain, Shape: r.Decision.Shape, Excluded: r.Decision.Excluded, ErrMsg: r.ErrMsg}
}

const u = "<unchanged>"

func TestDecideRewrites(t *testing.T) {
	tests := []struct {
		name string
		busy map[string]int
		job  Job
		want rewrite
	}{
		{
			// node01 and node05 taken: leaves 1 and 2 have 3 whole nodes, 3
			// and 4 have 4. The gang goes to leaf3 as 4x8; every leaf could
			// hold 32 GPUs some day, so all are listed, the free ones first.
			name: "32 GPUs at leaf avoid the broken leaves",
			busy: full("node01", "node05"),
			job:  Job{Name: "gang", TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", Prefer: u,
				ExcNodes: u, TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "leaf3", Shape: "4x8"},
		},
		{
			name: "8 GPUs at nvlink stay on one node",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:8", GangTopology: "nvlink"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				MinNodes: 1, MaxNodes: 1, Domain: "node01/nvl0"},
		},
		{
			name: "16 GPUs with slice=8 take two whole nodes of one leaf",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf,slice=8"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Domain: "leaf1", Shape: "2x8"},
		},
		{
			name: "preferred binds while the tier has room",
			busy: full("node01", "node05"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "leaf3", Shape: "4x8"},
		},
		{
			// one node busy per leaf: no leaf has room; the engine goes to
			// spine1 (node02-04 + node06) and the job is left unbound
			name: "preferred without room goes wider",
			busy: full("node01", "node05", "node09", "node13"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictWider, Features: u, Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "spine1", Shape: "4x8"},
		},
		{
			// one free node per leaf, one GPU of node16 busy: 31 GPUs
			// free in all; a gang larger than a node waits unbound, free
			// to start wider
			name: "preferred gang with no room anywhere waits unbound",
			busy: with(with(with(with(full(allNodes()...), "node04", 0), "node08", 0), "node12", 0), "node16", 1),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: u, Prefer: u, ExcNodes: u,
				TresPerJob: u, TresPerNode: u},
		},
		{
			// every node full but node02 (2 free) and node06 (1 free): no
			// room anywhere; the job waits for one node (-N 1) instead of
			// taking the first 4 GPUs that free on any nodes
			name: "preferred that fits a node waits for one node",
			busy: with(with(full(allNodes()...), "node02", 6), "node06", 7),
			job:  Job{TresPerJob: "gres:gpu:4", GangTopology: "node:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: u, Prefer: u, ExcNodes: u,
				TresPerJob: u, TresPerNode: u, MinNodes: 1, MaxNodes: 1},
		},
		{
			// one node busy in every leaf: no leaf has 32 GPUs free now
			name: "required waits bound to every leaf",
			busy: full("node01", "node05", "node09", "node13"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: u, TresPerNode: u},
		},
		{
			// leaf1 has 16 GPUs busy, leaf2 1, leaf3 8, leaf4 4: the
			// leaves closest to fitting come first (where Slurm preempts
			// for the gang, it preempts in the first with room)
			name: "required waits bound closest to fitting first",
			busy: map[string]int{"node01": 8, "node02": 8, "node06": 1, "node09": 8, "node13": 4},
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: "[gt_leaf2|gt_leaf4|gt_leaf3|gt_leaf1]", Prefer: u, ExcNodes: u,
				TresPerJob: u, TresPerNode: u},
		},
		{
			name: "user constraint is kept",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "spine", Features: "bigmem"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "(bigmem)&[gt_spine1|gt_spine2]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Domain: "leaf1", Shape: "2x8"},
		},
		{
			// node02 has 6 of 8 busy: the 1-GPU job fills that hole, and the
			// whole free nodes are excluded so Slurm does not break one
			name: "small job fills a hole and keeps whole nodes whole",
			busy: with(full("node01", "node03", "node04"), "node02", 6),
			job:  Job{TresPerJob: "gres:gpu:1"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0", Excluded: "node[05-16]"},
		},
		{
			// the user's own --exclude=node16 stays; the decision records
			// only what gangtopo added, for gangtopo unbind
			name: "small job keeps the user's exclusions apart from gangtopo's",
			busy: with(full("node01", "node03", "node04"), "node02", 6),
			job:  Job{TresPerJob: "gres:gpu:1", ExcNodes: "node16"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0", Excluded: "node[05-15]"},
		},
		{
			// a comma inside brackets separates numbers: both of the user's
			// nodes stay excluded, and neither is recorded as gangtopo's
			name: "the user's bracket list is read whole",
			busy: with(full("node01", "node04"), "node02", 6),
			job:  Job{TresPerJob: "gres:gpu:1", ExcNodes: "node[03,16]"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[03,05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0", Excluded: "node[05-15]"},
		},
		{
			name: "impossible size is refused with what would work",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:64", GangTopology: "leaf"},
			want: rewrite{Action: Reject, Verdict: VerdictRefused, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				ErrMsg: "gangtopo: 64 GPUs can never fit in one leaf: the largest (leaf1) holds 32; use --gang-topology=spine, or ask for at most 32 GPUs"},
		},
		{
			// --gpus=16 --gpus-per-node=3: the engine placed 15 GPUs (5 x 3)
			// and said placed; now refused, as Slurm refuses it
			name: "GPUs per node that do not divide the GPUs are refused",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:16", TresPerNode: "gres:gpu:3", GangTopology: "leaf"},
			want: rewrite{Action: Reject, Verdict: VerdictRefused, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				ErrMsg: "gangtopo: 16 GPUs with 3 GPUs per node is not a whole number of nodes (5 nodes hold 15, 6 nodes hold 18): ask for a multiple of 3 GPUs, or leave out --gpus-per-node"},
		},
		{
			// --gpus=8 -N 3 (uneven: Slurm splits it as it finds the GPUs)
			// was "can never fit"; it passes as submitted, and sbatch says
			// why (TestNeverRefusesWhatSlurmRuns: the engine's split is not
			// Slurm's, and judged by it a job Slurm runs was refused)
			name: "GPUs over a fixed node count that do not divide evenly",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:8", MinNodes: 3, MaxNodes: 3, GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictUntouched, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				ErrMsg: "gangtopo: --gang-topology=leaf:required is not applied: 8 GPUs over exactly 3 nodes is not handled by gangtopo (Slurm splits them unevenly, the engine evenly); the job is queued as submitted"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, nil, tc.busy)
			got := summarize(decide(t, d, s, tc.job))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func mustOption(t *testing.T, s string) request.Option {
	t.Helper()
	o, err := request.ParseOption(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// scopeAnswer is what the scope tests compare: what happens to the job,
// how loudly it is logged, the decision recorded in it, the user's note.
type scopeAnswer struct {
	Action  Action
	Level   LogLevel
	Verdict Verdict
	Cause   Cause
	Note    string
}

func TestDecideScope(t *testing.T) {
	gpuOnly := func(c *Policy) { c.Partitions = []string{"gpu"} }
	gang := func(c *Policy) { c.Jobs = ScopeGang }
	placed := scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictPlaced}
	tests := []struct {
		name string
		edit func(*Policy)
		job  Job
		want scopeAnswer
	}{
		{"no GPUs", nil, Job{MinCPUs: 4}, scopeAnswer{}},
		{"gang scope skips jobs without the option", gang, Job{TresPerJob: "gres:gpu:2"},
			scopeAnswer{Level: LogDebug}},
		{"gpu scope takes them", nil, Job{TresPerJob: "gres:gpu:2"}, placed},
		// jobs submitted without -p reach job_submit without a partition;
		// Slurm puts them into its default partition later
		{"default partition in scope", gpuOnly, Job{TresPerJob: "gres:gpu:2", GangTopology: "leaf", DefaultPartition: "gpu"}, placed},
		{"default partition out of scope", gpuOnly, Job{TresPerJob: "gres:gpu:2", GangTopology: "leaf", DefaultPartition: "debug"},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseOutOfScope,
				Note: `gangtopo: --gang-topology=leaf:required is not applied: partition "debug" (Slurm's default) is not in gangtopo.yaml's partitions (gpu); the job is queued as submitted`}},
		{"no partition and no default known", gpuOnly, Job{TresPerJob: "gres:gpu:2"}, scopeAnswer{Level: LogDebug}},
		{"partition outside the configured ones, no option", func(c *Policy) { c.Partitions = []string{"train"} },
			Job{TresPerJob: "gres:gpu:2", Partition: "debug"}, scopeAnswer{Level: LogDebug}},
		{"partition outside the configured ones, default from the environment", gpuOnly,
			Job{TresPerJob: "gres:gpu:2", Partition: "debug", GangTopology: "leaf:preferred", GangTopologyFromEnv: true}, scopeAnswer{Level: LogDebug}},
		{"partition outside the topology", nil, Job{TresPerJob: "gres:gpu:2", Partition: "cpu"},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseNotCovered}},
		{"partition outside the topology, explicit option", nil, Job{TresPerJob: "gres:gpu:2", Partition: "cpu", GangTopology: "leaf"},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseNotCovered,
				Note: `gangtopo: --gang-topology=leaf:required is not applied: partition "cpu" is not in the cluster file of lab16 (its partitions: gpu); the job is queued as submitted`}},
		{"node outside the topology, explicit option", nil, Job{TresPerJob: "gres:gpu:2", ExcNodes: "login1", GangTopology: "leaf"},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseNotCovered,
				Note: `gangtopo: --gang-topology=leaf:required is not applied: node "login1" is not in the cluster file of lab16; the job is queued as submitted`}},
		{"gpus per socket", nil, Job{TresPerSocket: "gres:gpu:1", GangTopology: "leaf"},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseUnsupported,
				Note: "gangtopo: --gang-topology=leaf:required is not applied: --gpus-per-socket is not handled by gangtopo; the job is queued as submitted"}},
		{"node count range, default from the environment: no note", nil,
			Job{TresPerJob: "gres:gpu:4", MinNodes: 2, MaxNodes: 3, GangTopology: "leaf", GangTopologyFromEnv: true},
			scopeAnswer{Action: Modify, Level: LogInfo, Verdict: VerdictUntouched, Cause: CauseUnsupported}},
		// $GANGTOPO_TOPOLOGY is a default: a CPU job does not get refused
		{"default from the environment on a CPU job", nil, Job{MinCPUs: 4, GangTopology: "leaf:preferred", GangTopologyFromEnv: true},
			scopeAnswer{Level: LogDebug}},
		{"explicit option on a CPU job", nil, Job{MinCPUs: 4, GangTopology: "leaf"},
			scopeAnswer{Action: Reject, Level: LogInfo, Verdict: VerdictRefused, Note: "gangtopo: --gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)"}},
		{"explicit option with --gpus=0", nil, Job{TresPerJob: "gres:gpu:0", GangTopology: "leaf"},
			scopeAnswer{Action: Reject, Level: LogInfo, Verdict: VerdictRefused, Note: "gangtopo: --gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)"}},
		{"GRES that are not GPUs", nil, Job{TresPerNode: "gres:nic:1"}, scopeAnswer{}},
		{"a tier the cluster lacks, from the environment", nil, Job{TresPerJob: "gres:gpu:2", GangTopology: "block", GangTopologyFromEnv: true},
			scopeAnswer{Action: Reject, Level: LogInfo, Verdict: VerdictRefused,
				Note: "gangtopo: $GANGTOPO_TOPOLOGY=block:required: cluster lab16 has no block domains (its tiers: nvlink, node, leaf, spine, any)"}},
		// jobs: all (main): CPU jobs of the cluster file's partitions; one
		// without -p is in Slurm's default partition
		{"jobs: all places CPU jobs of the cluster's partitions", func(c *Policy) { c.Jobs = ScopeAll }, Job{MinCPUs: 4, Partition: "gpu"}, placed},
		{"jobs: all places CPU jobs of the default partition", func(c *Policy) { c.Jobs = ScopeAll }, Job{MinCPUs: 4, DefaultPartition: "gpu"}, placed},
		{"jobs: all leaves CPU jobs when the default partition is not known", func(c *Policy) { c.Jobs = ScopeAll }, Job{MinCPUs: 4}, scopeAnswer{}},
		{"jobs: all leaves CPU jobs of other partitions alone, quietly", func(c *Policy) { c.Jobs = ScopeAll }, Job{MinCPUs: 4, Partition: "cpu"}, scopeAnswer{}},
		{"jobs: gpu leaves CPU jobs alone", nil, Job{MinCPUs: 4, Partition: "gpu"}, scopeAnswer{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, tc.edit, map[string]int{})
			r := decide(t, d, s, tc.job)
			got := scopeAnswer{Action: r.Action, Level: r.LogLevel, Verdict: r.Decision.Verdict, Cause: r.Decision.Cause, Note: r.ErrMsg}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nlog: %s", diff, r.Log)
			}
			if (r.Action == Modify) != (r.AdminComment != nil) {
				t.Errorf("action %v with AdminComment %v: a job gangtopo changes carries its decision, and only such a job", r.Action, r.AdminComment)
			}
		})
	}
}

// The decision goes after what the field held: an AdminComment an earlier
// job_submit plugin wrote, or the user's comment (decision_field: comment).
func TestDecisionAppended(t *testing.T) {
	d, s := decideFixture(t, nil, map[string]int{})
	r := decide(t, d, s, Job{TresPerJob: "gres:gpu:2", AdminComment: "lua: site=x", Comment: "mine"})
	if r.AdminComment == nil || !strings.HasPrefix(*r.AdminComment, "lua: site=x | gangtopo v1 placed ") || r.Comment != nil {
		t.Errorf("AdminComment %v, Comment %v; want the decision appended to the AdminComment", r.AdminComment, r.Comment)
	}
	d, s = decideFixture(t, func(p *Policy) { p.DecisionField = FieldComment }, map[string]int{})
	r = decide(t, d, s, Job{TresPerJob: "gres:gpu:2", AdminComment: "lua: site=x", Comment: "mine"})
	if r.Comment == nil || !strings.HasPrefix(*r.Comment, "mine | gangtopo v1 placed ") || r.AdminComment != nil {
		t.Errorf("Comment %v, AdminComment %v; want the decision appended to the comment", r.Comment, r.AdminComment)
	}
}

// A cluster file built without partitions (`topology build` without
// --partition) covers every partition: a job naming one is placed over the
// file's nodes rather than left as submitted.
func TestClusterWithoutPartitionsCoversThemAll(t *testing.T) {
	spec := topotest.Lab16Spec()
	for i := range spec.Nodes {
		spec.Nodes[i].Partitions = nil
	}
	c := topotest.MustBuild(spec)
	p := DefaultPolicy()
	d, err := New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Decide(Job{TresPerJob: "gres:gpu:16", Partition: "gpu", GangTopology: "leaf"}, occupancy.New(c), 1, place.New(c, place.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Verdict != VerdictPlaced {
		t.Errorf("verdict %q (%s), want placed", res.Decision.Verdict, res.Log)
	}
}

// On nodes whose GPUs are NVLink-bridged pairs, the rewrite holds an
// nvlink gang to one node but cannot choose its GPUs: the decision says the
// island is advisory there. On NVSwitch nodes (Lab16) it says nothing.
func TestNVLinkIslandsAdvisoryOnPairs(t *testing.T) {
	c := topotest.SingleNode(topotest.PCIeEightGPU("pcie1"))
	d, err := New(DefaultPolicy(), c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Decide(Job{TresPerJob: "gres:gpu:2", GangTopology: "nvlink"}, occupancy.New(c), 1, place.New(c, place.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "(advisory on pcie1: it has 4 NVLink islands, and which of its GPUs the job gets is Slurm's choice)"; !strings.Contains(res.Decision.Text, want) {
		t.Errorf("decision %q, want it to say %q", res.Decision.Text, want)
	}
	ld, s := decideFixture(t, nil, map[string]int{})
	if r := decide(t, ld, s, Job{TresPerJob: "gres:gpu:2", GangTopology: "nvlink"}); strings.Contains(r.Decision.Text, "advisory") {
		t.Errorf("NVSwitch node: %q", r.Decision.Text)
	}
}

// withFeatures makes the snapshot report that every node carries the
// features gen features writes, but for those in missing ("node02" drops
// all of node02's, "gt_node02" that one).
func withFeatures(t *testing.T, s *occupancy.Snapshot, missing ...string) {
	t.Helper()
	fs, err := NodeFeatures(s.Cluster, DefaultFeaturePrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range missing {
		if id, ok := s.Cluster.NodeByName(name); ok {
			fs[id] = nil
			continue
		}
		for i := range fs {
			fs[i] = slices.DeleteFunc(fs[i], func(f string) bool { return f == name })
		}
	}
	s.Features = fs
}

func TestDecideNodeBinding(t *testing.T) {
	tests := []struct {
		name    string
		busy    map[string]int
		missing []string // nodes without their gangtopo features
		bind    int
		job     Job
		want    rewrite
	}{
		{
			// node02 has 2 GPUs free, node06 3, the rest are whole: the
			// engine fills node02's hole first, then node06's; whole nodes
			// rank last, in node order.
			name: "a one-node job is bound to the engine's ranked nodes",
			busy: with(with(full("node01", "node03", "node04"), "node02", 6), "node06", 5),
			bind: 4,
			job:  Job{TresPerJob: "gres:gpu:1"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_node02|gt_node06|gt_node05|gt_node07]", Prefer: u,
				ExcNodes: u, TresPerJob: u, TresPerNode: u, MinNodes: 1, MaxNodes: 1, Domain: "node02/nvl0"},
		},
		{
			name: "the user's constraint is kept",
			busy: with(full("node01", "node03", "node04"), "node02", 6),
			bind: 2,
			job:  Job{TresPerJob: "gres:gpu:1", Features: "ib"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "(ib)&[gt_node02|gt_node05]", Prefer: u,
				ExcNodes: u, TresPerJob: u, TresPerNode: u, MinNodes: 1, MaxNodes: 1, Domain: "node02/nvl0"},
		},
		{
			// the engine's node lacks its feature: never send the job
			// elsewhere; keep the whole nodes whole instead
			name:    "the chosen node without its feature falls back to exclusions",
			busy:    with(full("node01", "node03", "node04"), "node02", 6),
			missing: []string{"gt_node02"},
			bind:    4,
			job:     Job{TresPerJob: "gres:gpu:1"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0", Excluded: "node[05-16]"},
		},
		{
			name: "bind_nodes 0 keeps the exclusions",
			busy: with(full("node01", "node03", "node04"), "node02", 6),
			job:  Job{TresPerJob: "gres:gpu:1"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0", Excluded: "node[05-16]"},
		},
		{
			// leaf3's nodes lack their features: Slurm would refuse a job
			// naming gt_leaf3, so it is left out of the list, and the
			// engine does not place there (leaf4 is the free leaf left)
			name:    "domains whose feature no node carries are not listed",
			busy:    full("node01", "node05"),
			missing: []string{"node09", "node10", "node11", "node12"},
			job:     Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf4|gt_leaf1|gt_leaf2]", Prefer: u,
				ExcNodes: u, TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "leaf4", Shape: "4x8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, func(p *Policy) { p.BindNodes = tc.bind }, tc.busy)
			withFeatures(t, s, tc.missing...)
			got := summarize(decide(t, d, s, tc.job))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Slurm holds at most 64 alternatives in a matching OR: a cluster of 80
// leaves binds a leaf gang to the 64 best.
func TestDecideCapsAlternatives(t *testing.T) {
	c := topotest.FatTree(2, 40, 2, topotest.DGXH100)
	d, err := New(DefaultPolicy(), c)
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(c)
	res := decide(t, d, s, Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf"})
	if n := strings.Count(*res.Features, "|") + 1; n != 64 {
		t.Errorf("%d alternatives in %q, want 64", n, *res.Features)
	}
}

// The decision records the GPU models a job accepts, the controller's only
// way to learn the cluster's model-constrained demand; a job that names
// none records none.
func TestDecisionRecordsModels(t *testing.T) {
	// One GPU busy in the first node of every leaf: no leaf has four
	// whole nodes for a 32-GPU gang.
	d, s := decideFixture(t, nil, map[string]int{"node01": 1, "node05": 1, "node09": 1, "node13": 1})
	for _, tc := range []struct {
		name string
		job  Job
		want []string
	}{
		{"typed GRES", Job{TresPerJob: "gres:gpu:h100:2"}, []string{"h100"}},
		{"no model", Job{TresPerJob: "gres:gpu:2"}, nil},
		// a required leaf gang waits, bound, and still says its model
		{"waiting", Job{TresPerJob: "gres:gpu:h100:32", GangTopology: "leaf"}, []string{"h100"}},
	} {
		dec := decide(t, d, s, tc.job).Decision
		if tc.name == "waiting" && dec.Verdict != VerdictWaiting {
			t.Errorf("%s: verdict %s, want waiting", tc.name, dec.Verdict)
		}
		if diff := cmp.Diff(tc.want, dec.Models); diff != "" {
			t.Errorf("%s (%s): models (-want +got):\n%s", tc.name, dec.Verdict, diff)
		}
	}
}
