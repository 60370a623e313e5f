package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// leafSpares keeps one spare a leaf on Lab16: node04, node08, node12,
// node16; jobs of at most 2 GPUs in partition scav may borrow them.
func leafSpares(p *Policy) {
	p.Spares = Spares{Tier: topology.TierLeaf, PerDomain: 1, LendPartitions: []string{"scav"}, LendMaxGPUs: 2}
}

func TestSpareNodes(t *testing.T) {
	c := topotest.Lab16()
	names := func(s Spares) string {
		return strings.Join(nodeNames(c, SpareNodes(c, s)), ",")
	}
	tests := []struct {
		name   string
		spares Spares
		want   string
		err    string
	}{
		{name: "off", spares: Spares{Tier: topology.TierLeaf}},
		{name: "one a leaf: the last node of each", spares: Spares{Tier: topology.TierLeaf, PerDomain: 1}, want: "node04,node08,node12,node16"},
		{name: "a leaf keeps one node that is not a spare", spares: Spares{Tier: topology.TierLeaf, PerDomain: 9},
			want: "node02,node03,node04,node06,node07,node08,node10,node11,node12,node14,node15,node16"},
		{name: "a node has no spares", spares: Spares{Tier: topology.TierNode, PerDomain: 1}, err: "spares: tier node: want a tier of cluster"},
		{name: "the whole cluster is not a domain to keep spares in", spares: Spares{Tier: topology.TierCluster, PerDomain: 1}, err: "spares: tier any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSpares(c, tt.spares)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(tt.spares); got != tt.want {
				t.Errorf("spares %s; want %s", got, tt.want)
			}
		})
	}
}

// Ordinary jobs keep off the spares (the engine's request and Slurm's
// ExcNodeList, recorded as gangtopo's), lent work may use them, and
// Original gives the job back as submitted.
func TestSparesAtSubmit(t *testing.T) {
	lendGPU := func(p *Policy) { leafSpares(p); p.Spares.LendPartitions = []string{"gpu"} }
	tests := []struct {
		name     string
		job      Job
		action   Action
		exc      string // the job's ExcNodeList after the rewrite
		excluded string // the decision's excluded=
		msg      string // the refusal's, or the start of the decision's text
	}{
		{name: "leaf gang", job: Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf", Name: "g16"}, action: Modify,
			exc: "node[04,08,12,16]", excluded: "node[04,08,12,16]", msg: "placed in leaf leaf1 on node01:0-7,node03:0-7"},
		{name: "a whole leaf is a leaf less its spare", job: Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Name: "g32"}, action: Reject,
			msg: "gangtopo: 32 GPUs can never fit in one leaf: the largest (leaf1) holds 24; use --gang-topology=spine, or ask for at most 24 GPUs (the sizes count no spares: gangtopo.yaml keeps 1 node(s) of each leaf for gangs restarting after a node failure)"},
		{name: "the user's exclusions kept, the spares added", job: Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf", Name: "g16", ExcNodes: "node01,node08"}, action: Modify,
			exc: "node[01,04,08,12,16]", excluded: "node[04,12,16]", msg: "placed in leaf leaf2 on node05:0-7,node06:0-7"},
		{name: "one node: bound to ranked nodes, none a spare", job: Job{TresPerJob: "gres:gpu:2", Name: "small"}, action: Modify,
			exc: "node[04,08,12,16]", excluded: "node[04,08,12,16]", msg: "placed in nvlink node02/nvl0 on node02:6-7"},
		{name: "lent: small, in a lending partition", job: Job{TresPerJob: "gres:gpu:2", Name: "lent", Partition: "gpu"}, action: Modify,
			msg: "placed in nvlink node02/nvl0 on node02:6-7"},
		{name: "too big to be lent", job: Job{TresPerJob: "gres:gpu:4", Name: "big", Partition: "gpu"}, action: Modify,
			exc: "node[04,08,12,16]", excluded: "node[04,08,12,16]", msg: "placed in nvlink node01/nvl0 on node01:0-3"},
		{name: "a spare the user names is the user's", job: Job{TresPerJob: "gres:gpu:8", Name: "w", ReqNodes: "node08"}, action: Modify,
			exc: "node[04,12,16]", excluded: "node[04,12,16]", msg: "placed in nvlink node08/nvl0 on node08:0-7"},
		{name: "no partition named: not lent", job: Job{TresPerJob: "gres:gpu:1", Name: "nopart"}, action: Modify,
			exc: "node[04,08,12,16]", excluded: "node[04,08,12,16]", msg: "placed in nvlink node02/nvl0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, s := decideFixture(t, lendGPU, with(map[string]int{}, "node02", 6))
			withFeatures(t, s)
			res := decide(t, d, s, tt.job)
			if res.Action != tt.action {
				t.Fatalf("action %v; want %v (%s)", res.Action, tt.action, res.Log)
			}
			if tt.action == Reject {
				if res.ErrMsg != tt.msg {
					t.Errorf("message\n%s\nwant\n%s", res.ErrMsg, tt.msg)
				}
				return
			}
			got := res.Apply(tt.job)
			if got.ExcNodes != tt.exc && !(tt.exc == "" && got.ExcNodes == tt.job.ExcNodes) {
				t.Errorf("ExcNodeList %q; want %q", got.ExcNodes, tt.exc)
			}
			if res.Decision.Excluded != tt.excluded || !strings.HasPrefix(res.Decision.Text, tt.msg) {
				t.Errorf("decision %s; want excluded=%s and %q", res.Decision, tt.excluded, tt.msg)
			}
			for _, b := range res.Decision.Bound {
				if n, ok := d.Cluster().NodeByName(b); ok && tt.excluded != "" && slicesContain(SpareNodes(d.Cluster(), d.Policy().Spares), n) {
					t.Errorf("bound to spare %s", b)
				}
			}
			orig, err := Original(got, res.Decision, d.Policy().FeaturePrefix)
			if err != nil {
				t.Fatal(err)
			}
			if orig.ExcNodes != tt.job.ExcNodes && hostlistOf(t, orig.ExcNodes) != hostlistOf(t, tt.job.ExcNodes) {
				t.Errorf("original ExcNodeList %q; want %q", orig.ExcNodes, tt.job.ExcNodes)
			}
		})
	}
}

// A gang requeued after a node failure restarts in its old leaf on the
// leaf's spare; its decision records the leaf, so the controller's later
// re-binding keeps the spare allowed, and Original still gives the job as
// submitted.
func TestRestartOnSpare(t *testing.T) {
	job := Job{TresPerJob: "gres:gpu:24", GangTopology: "leaf", Name: "g"}
	tests := []struct {
		name     string
		busy     map[string]int
		inOld    bool
		features string
		exc      string
		spares   []string
		lent     []occupancy.Job // running jobs on node08 (leaf2's spare), GPUs from 0
		reclaims string
	}{
		// leaf2 without its spare has 16 healthy GPUs, with node08 24
		{name: "the old leaf's spare replaces the failed node", busy: full("node01"), inOld: true,
			features: "[gt_leaf2|gt_leaf3|gt_leaf4|gt_leaf1]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
		// the spare is taken (lent work): the gang goes to a leaf whole
		// without its spare, the other leaves' spares still excluded
		{name: "the spare busy: the tightest leaf elsewhere", busy: full("node01", "node08"),
			features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
		// lent work on the spare (partition scav, at most 2 GPUs), no other
		// leaf free: counted as gone, Slurm preempts it to start the gang
		// in its old leaf
		{name: "lent work on the spare is taken back", busy: full("node01", "node09", "node13"), lent: []occupancy.Job{onSpare("77", "scav", 2), onSpare("78", "scav", 1)},
			inOld: true, features: "gt_leaf2", exc: "node[04,12,16]", spares: []string{"leaf2"}, reclaims: "77,78"},
		// a free leaf holds the gang: lent work is not taken back for it
		{name: "lent work stays while another leaf is free", busy: full("node01"), lent: []occupancy.Job{onSpare("77", "scav", 2)},
			features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
		{name: "a job of a partition that does not lend is not taken back", busy: full("node01"), lent: []occupancy.Job{onSpare("77", "gpu", 2)},
			features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
		{name: "a job larger than lend_max_gpus is not taken back", busy: full("node01"), lent: []occupancy.Job{onSpare("77", "scav", 3)},
			features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
		{name: "one of the jobs does not lend: none is taken back", busy: full("node01"), lent: []occupancy.Job{onSpare("77", "scav", 1), onSpare("78", "scav,gpu", 1)},
			features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", exc: "node[04,12,16]", spares: []string{"leaf2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, now, dec := submitted(t, leafSpares, map[string]int{}, job)
			if dec.Excluded != "node[04,08,12,16]" {
				t.Fatalf("excluded at submit %q", dec.Excluded)
			}
			s := down(t, snapshotOf(t, d, tt.busy), "node06")
			next := 0
			for _, j := range tt.lent {
				n, _ := d.Cluster().NodeByName("node08")
				j.Alloc.Nodes[0].Node = n
				for i := range j.Alloc.Nodes[0].GPUs {
					j.Alloc.Nodes[0].GPUs[i] = next
					next++
				}
				if err := s.AddJob(j); err != nil {
					t.Fatal(err)
				}
			}
			before := s.Clone()
			e := place.New(d.Cluster(), d.Policy().EngineOptions(nil))
			rs := d.Restart(now, dec, []string{"node05", "node06", "node07"}, s, e, 9)
			if !rs.Stale || rs.InOld != tt.inOld || strings.Join(rs.Reclaims, ",") != tt.reclaims {
				t.Fatalf("stale %v, in old %v, reclaims %v (%s); want re-bound, in old %v, reclaims %q", rs.Stale, rs.InOld, rs.Reclaims, rs.Why, tt.inOld, tt.reclaims)
			}
			if tt.reclaims != "" && !strings.Contains(rs.Why, "preempts the lent job(s) "+tt.reclaims) {
				t.Errorf("why %q does not name the lent jobs", rs.Why)
			}
			if diff := cmp.Diff(before.FreeMilli, s.FreeMilli); diff != "" || len(s.Jobs) != len(before.Jobs) {
				t.Errorf("Restart changed the snapshot it was given (-before +after):\n%s", diff)
			}
			after := rs.Update.Apply(now)
			got := []string{after.Features, after.ExcNodes, strings.Join(rs.Result.Decision.Spares, ",")}
			want := []string{tt.features, tt.exc, strings.Join(tt.spares, ",")}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("features, ExcNodeList, spares= (-want +got):\n%s", diff)
			}
			for _, a := range rs.Tasks {
				for _, na := range a.Nodes {
					if name := d.Cluster().Nodes[na.Node].Name; name == "node06" || tt.inOld && name != "node05" && name != "node07" && name != "node08" {
						t.Errorf("placed on %s", name)
					}
				}
			}
			// the re-bound job as Slurm holds it: re-binding it again
			// keeps the spare, and Original is the job as submitted
			if rb := rebind(t, d, after, rs.Result.Decision, s); rb.Stale {
				t.Errorf("re-bound again: %s (%s)", rb.Update, rb.Why)
			}
			orig, err := Original(after, rs.Result.Decision, d.Policy().FeaturePrefix)
			if err != nil || orig.ExcNodes != "" || orig.Features != "" {
				t.Errorf("original %+v, %v; want the job as submitted", orig, err)
			}
		})
	}
}

// onSpare is a running job of k GPUs in partition part (its node and GPUs
// set by the test).
func onSpare(id, part string, k int) occupancy.Job {
	return occupancy.Job{ID: id, Partition: part, Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{GPUs: make([]int, k), Milli: occupancy.WholeGPU}}}}
}

func slicesContain(ids []topology.NodeID, n topology.NodeID) bool {
	for _, id := range ids {
		if id == n {
			return true
		}
	}
	return false
}

// hostlistOf is a host list in one canonical form.
func hostlistOf(t *testing.T, s string) string {
	t.Helper()
	names, err := hostlist.Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	return hostlist.Compress(names)
}
