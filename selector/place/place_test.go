package place

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// occupy marks GPUs busy: each spec is "node:0-3" or "node:all".
func occupy(t *testing.T, s *occupancy.Snapshot, specs ...string) {
	t.Helper()
	c := s.Cluster
	for _, spec := range specs {
		name, idx, _ := strings.Cut(spec, ":")
		id, ok := c.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		var gpus []int
		if idx == "all" {
			for i := 0; i < c.Nodes[id].NumGPUs(); i++ {
				gpus = append(gpus, i)
			}
		} else {
			for _, part := range strings.Split(idx, ",") {
				lo, hi, isRange := strings.Cut(part, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if isRange {
					b, _ = strconv.Atoi(hi)
				}
				for i := a; i <= b; i++ {
					gpus = append(gpus, i)
				}
			}
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name     string
		cluster  func() *topology.Cluster
		busy     []string
		req      request.Request
		want     string // Describe(alloc), or "" when not placed
		status   Status
		tier     topology.Tier
		inDomain string
	}{
		{name: "first gpu on an empty cluster", cluster: topotest.Lab16,
			req: request.Request{GPUs: 1}, want: "node01:0", status: Placed, tier: topology.TierNVLink},
		// node07 has 7 free GPUs: a 1-GPU job fills that hole instead of
		// breaking a whole node (FGD: whole nodes serve 8-GPU jobs).
		{name: "small job fills a hole", cluster: topotest.Lab16, busy: []string{"node07:0"},
			req: request.Request{GPUs: 1}, want: "node07:1", status: Placed, tier: topology.TierNVLink},
		// Two holes of equal size: the one in the busier leaf is filled
		// (leaf2 has less idle capacity than leaf3).
		{name: "fills the busier leaf", cluster: topotest.Lab16, busy: []string{"node10:0-3", "node06:0-3", "node05:all"},
			req: request.Request{GPUs: 4}, want: "node06:4-7", status: Placed, tier: topology.TierNVLink},
		// leaf1 and leaf2 each have a busy GPU (31 free): a 32-GPU leaf gang
		// goes to leaf3, the first of the two whole leaves.
		{name: "leaf gang avoids broken leaves", cluster: topotest.Lab16, busy: []string{"node01:0", "node05:0"},
			req: request.Request{GPUs: 32, Tier: topology.TierLeaf}, want: "node09:0-7,node10:0-7,node11:0-7,node12:0-7",
			status: Placed, tier: topology.TierLeaf, inDomain: "leaf3"},
		// 24 GPUs: leaf1 has node02-04 whole (24): the gang fits there
		// exactly and leaves leaf2-4 whole for bigger gangs.
		// -N 3 --gpus=8 splits unevenly: the three tightest nodes holding 8
		// (node01 has 2 free, node02 3, node03 4: 2+3+4 = 9 >= 8), the
		// fullest first as much as leaves one GPU for each after it:
		// node03 4, node02 3, node01 the last 1
		{name: "uneven split over a fixed node count", cluster: topotest.Lab16,
			busy: []string{"node01:0-5", "node02:0-4", "node03:0-3"},
			req:  request.Request{GPUs: 8, Nodes: 3}, want: "node03:4-7,node02:5-7,node01:6",
			status: Placed, tier: topology.TierLeaf, inDomain: "leaf1"},
		// --gpus 6 --gpus-per-node 3: two nodes of 3, never 6 on one
		{name: "GPUs per node fix the node count", cluster: topotest.Lab16,
			req: request.Request{GPUs: 6, GPUsPerNode: 3}, want: "node01:0-2,node02:0-2", status: Placed, tier: topology.TierLeaf},
		{name: "gang takes the tightest leaf", cluster: topotest.Lab16, busy: []string{"node01:all"},
			req: request.Request{GPUs: 24, Tier: topology.TierLeaf}, want: "node02:0-7,node03:0-7,node04:0-7",
			status: Placed, tier: topology.TierLeaf, inDomain: "leaf1"},
		{name: "slice of 8 takes whole nodes", cluster: topotest.Lab16, busy: []string{"node01:0", "node02:0", "node03:0"},
			req: request.Request{GPUs: 16, Slice: 8, Tier: topology.TierLeaf}, want: "node05:0-7,node06:0-7",
			status: Placed, tier: topology.TierLeaf, inDomain: "leaf2"},
		// Preferred with slices: no leaf holds two whole nodes, so the gang
		// spans leaf1 and leaf2 under spine1 (fewest leaves, then order).
		{name: "slice widens over the spine", cluster: topotest.Lab16,
			busy: []string{"node01:0", "node02:0", "node03:0", "node06:0", "node07:0", "node08:0",
				"node09:0", "node10:0", "node11:0", "node13:0", "node14:0", "node15:0"},
			req:  request.Request{GPUs: 16, Slice: 8, Tier: topology.TierLeaf, Mode: request.Preferred},
			want: "node04:0-7,node05:0-7", status: Placed, tier: topology.TierSpine, inDomain: "spine1"},
		{name: "nvlink never spans nodes", cluster: topotest.Lab16,
			busy: []string{"node01:0", "node02:0", "node03:0", "node04:0", "node05:0", "node06:0", "node07:0", "node08:0",
				"node09:0", "node10:0", "node11:0", "node12:0", "node13:0", "node14:0", "node15:0", "node16:0"},
			req: request.Request{GPUs: 8, Tier: topology.TierNVLink}, status: NoFit},
		{name: "nvlink gang too big ever", cluster: topotest.Lab16,
			req: request.Request{GPUs: 16, Tier: topology.TierNVLink}, status: Impossible},
		{name: "required leaf waits", cluster: topotest.Lab16, busy: []string{"node01:0", "node05:0", "node09:0", "node13:0"},
			req: request.Request{GPUs: 32, Tier: topology.TierLeaf}, status: NoFit},
		// Preferred: no leaf has 32 free; the gang goes to the spine, using
		// as few leaves as possible (two).
		{name: "preferred leaf widens", cluster: topotest.Lab16, busy: []string{"node01:0", "node05:0", "node09:0", "node13:0"},
			req: request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Preferred}, status: Placed, tier: topology.TierSpine},
		{name: "fixed shape prefers exact holes", cluster: topotest.Lab16, busy: []string{"node03:0-3", "node04:0-3"},
			req: request.Request{GPUs: 8, Nodes: 2, GPUsPerNode: 4, Tier: topology.TierLeaf}, want: "node03:4-7,node04:4-7",
			status: Placed, tier: topology.TierLeaf, inDomain: "leaf1"},
		{name: "rack holds 72 on nvlink", cluster: func() *topology.Cluster { return topotest.NVL72(2) },
			req: request.Request{GPUs: 72, Tier: topology.TierNVLink}, status: Placed, tier: topology.TierNVLink, inDomain: "rack01"},
		{name: "128 on nvlink never fits nvl72", cluster: func() *topology.Cluster { return topotest.NVL72(2) },
			req: request.Request{GPUs: 128, Tier: topology.TierNVLink}, status: Impossible},
		{name: "share goes to a used gpu", cluster: topotest.Lab16, busy: []string{"node02:0-6"},
			req: request.Request{GPUs: 1, Milli: 500}, want: "node02:7", status: Placed, tier: topology.TierNVLink},
		{name: "block tier on a cluster without blocks", cluster: topotest.Lab16,
			req: request.Request{GPUs: 8, Tier: topology.TierBlock}, status: Invalid},
		{name: "unknown model", cluster: topotest.Lab16,
			req: request.Request{GPUs: 8, Models: []string{"a100"}}, status: Invalid},
		{name: "excluded nodes", cluster: topotest.Lab16,
			req: request.Request{GPUs: 8, Excluded: []string{"node01", "node02"}}, want: "node03:0-7", status: Placed, tier: topology.TierNVLink},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster()
			s := occupancy.New(c)
			occupy(t, s, tc.busy...)
			res := New(c, Options{}).Place(s, tc.req)
			if res.Status != tc.status {
				t.Fatalf("status = %v (%s), want %v", res.Status, res.Message, tc.status)
			}
			if res.Status != Placed {
				return
			}
			if got := Describe(c, res.Alloc); tc.want != "" && got != tc.want {
				t.Errorf("placed on %s, want %s", got, tc.want)
			}
			if res.Tier != tc.tier {
				t.Errorf("tier reached = %v, want %v", res.Tier, tc.tier)
			}
			if tc.inDomain != "" && c.Domains[res.Domain].Name != tc.inDomain {
				t.Errorf("domain = %s, want %s", c.Domains[res.Domain].Name, tc.inDomain)
			}
			if err := s.Fits(res.Alloc); err != nil {
				t.Errorf("allocation does not fit the snapshot: %v", err)
			}
			if got := res.Alloc.NumGPUs(); got != tc.req.GPUs {
				t.Errorf("allocated %d GPUs, want %d", got, tc.req.GPUs)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name    string
		cluster func() *topology.Cluster
		busy    []string
		req     request.Request
		want    string
	}{
		{"nvlink too big", func() *topology.Cluster { return topotest.NVL72(2) },
			nil, request.Request{GPUs: 128, Tier: topology.TierNVLink},
			"128 GPUs can never fit in one nvlink: the largest (rack01) holds 72; use --gang-topology=leaf, or ask for at most 72 GPUs"},
		{"node too small", topotest.Lab16, nil, request.Request{GPUs: 9, Tier: topology.TierNode},
			"9 GPUs can never fit in one node: the largest (node01) holds 8; use --gang-topology=leaf, or ask for at most 8 GPUs"},
		{"leaf busy", topotest.Lab16, []string{"node01:0", "node05:0", "node09:0", "node13:0"},
			request.Request{GPUs: 32, Tier: topology.TierLeaf},
			"no leaf has room for 32 GPUs now (closest: leaf1 with 31 usable GPUs)"},
		{"no block tier", topotest.Lab16, nil, request.Request{GPUs: 8, Tier: topology.TierBlock},
			"cluster lab16 has no block domains (tiers here: nvlink, node, leaf, spine, any)"},
		{"bad model", topotest.Lab16, nil, request.Request{GPUs: 8, Models: []string{"a100"}},
			`unknown GPU model "a100" (models here: h100)`},
		// Lab16 nodes: 8 GPUs, 64 CPUs, 1,000,000 MiB. The message names
		// the resource that rules the gang out, and the most there is of it.
		{"memory rules it out", topotest.Lab16, nil,
			// sbatch --gpus=8 --gang-topology=leaf --mem=999999999
			request.Request{GPUs: 8, Tier: topology.TierLeaf, CPUMilli: 1000, MemMiB: 999999999},
			"8 GPUs can never fit in one leaf: memory rules it out: it asks 999999999 MiB (125000000 per GPU) and a node has at most 1000000 MiB; ask for less memory"},
		{"CPUs rule it out", topotest.Lab16, nil,
			// sbatch --gpus=1 --cpus-per-gpu=200
			request.Request{GPUs: 1, Tier: topology.TierCluster, Mode: request.Preferred, CPUMilli: 200000},
			"1 GPU can never fit in cluster lab16: CPUs rule it out: it asks 200 CPUs (200 per GPU) and a node has at most 64; ask for fewer CPUs"},
		{"CPUs per GPU leave too few GPUs per leaf", topotest.Lab16, nil,
			// 16 CPUs per GPU: 4 GPUs a node, 16 a leaf
			request.Request{GPUs: 32, Tier: topology.TierLeaf, CPUMilli: 32 * 16000},
			"32 GPUs can never fit in one leaf: CPUs rule it out: it asks 512 CPUs (16 per GPU) and a node has at most 64, so one leaf holds at most 16 such GPUs; ask for fewer CPUs or at most 16 GPUs"},
		{"shape rules it out", topotest.Lab16, nil,
			// -N 6 --gpus-per-node=4 at leaf: 24 GPUs, but a leaf has 4 nodes
			request.Request{GPUs: 24, Nodes: 6, GPUsPerNode: 4, Tier: topology.TierLeaf},
			"24 GPUs as 6x4 can never fit in one leaf: the shape rules it out: it asks 6 nodes with 4 GPUs each and one leaf has at most 4 such nodes; use --gang-topology=spine, or ask for at most 4 nodes"},
		// the real reason, not a GPU count that is not the problem (issue 25)
		{"several nodes at the node tier", topotest.Lab16, nil,
			// place --gpus 8 -N 3 --gang-topology node
			request.Request{GPUs: 8, Nodes: 3, Tier: topology.TierNode},
			"8 GPUs on 3 nodes can never fit in one node: it asks for 3 nodes, and --gang-topology=node keeps a job on one node here; use --gang-topology=leaf, or ask for one node"},
		{"more nodes than the cluster has", topotest.Lab16, nil,
			// -N 17 on 16 nodes
			request.Request{GPUs: 20, Nodes: 17},
			"20 GPUs on 17 nodes can never fit in cluster lab16: the node count rules it out: it asks for 17 nodes and the cluster has at most 16 it may use; ask for at most 16 nodes"},
		{"more GPUs than the nodes hold", func() *topology.Cluster { return topotest.NVL72(2) }, nil,
			// 3 four-GPU trays hold 12
			request.Request{GPUs: 16, Nodes: 3, Tier: topology.TierNVLink},
			"16 GPUs on 3 nodes can never fit: it asks for 3 nodes, and the 3 largest nodes hold 12 GPUs it may use; ask for more nodes or at most 12 GPUs"},
		{"more GPUs per node than a node has", topotest.Lab16, nil,
			// -N 3 --gpus 30: 10 a node, 8-GPU nodes
			request.Request{GPUs: 30, Nodes: 3},
			"30 GPUs as 3x10 can never fit: the shape rules it out: it asks for 10 GPUs on each node and the largest node it may use has 8; ask for more nodes, with at most 8 GPUs each"},
		{"GPUs per node that do not divide the GPUs", topotest.Lab16, nil,
			// place --gpus 16 --gpus-per-node 3 printed "placed" on 5 x 3
			request.Request{GPUs: 16, GPUsPerNode: 3},
			"16 GPUs with 3 GPUs per node is not a whole number of nodes (5 nodes hold 15, 6 nodes hold 18): ask for a multiple of 3 GPUs, or leave out --gpus-per-node"},
		{"slices fewer than nodes", topotest.Lab16, nil,
			// 21 GPUs in slices of 7: 3 slices for 5 nodes
			request.Request{GPUs: 21, Nodes: 5, Slice: 7},
			"21 GPUs in slices of 7 are 3 slices, fewer than the 5 nodes asked for: each node holds whole slices"},
		{"slice larger than each node's share", topotest.Lab16, nil,
			// -N 2 --gpus 4 slice=4 panicked in the engine (found by FuzzPlacementHoldsTheRequest)
			request.Request{GPUs: 4, Nodes: 2, Slice: 4, Tier: topology.TierLeaf},
			"slice=4 does not divide the 2 GPUs each of the 2 nodes gets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster()
			s := occupancy.New(c)
			occupy(t, s, tc.busy...)
			res := New(c, Options{}).Place(s, tc.req)
			if diff := cmp.Diff(tc.want, res.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectedCounts(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	for _, name := range []string{"node01", "node02"} {
		id, _ := c.NodeByName(name)
		s.SetState(id, occupancy.StateDrain)
	}
	occupy(t, s, "node03:all", "node04:0-6")
	res := New(c, Options{}).Place(s, request.Request{GPUs: 2, Excluded: []string{"node05"}})
	want := map[Reason]int{ReasonState: 2, ReasonExcluded: 1, ReasonGPUs: 2}
	if diff := cmp.Diff(want, res.Rejected); diff != "" {
		t.Errorf("Rejected (-want +got):\n%s", diff)
	}
}

func TestHeterogeneousModels(t *testing.T) {
	c := topotest.MustBuild(heteroSpec())
	s := occupancy.New(c)
	e := New(c, Options{})
	res := e.Place(s, request.Request{GPUs: 2, Models: []string{"T4"}})
	if res.Status != Placed || res.Model != "t4" || !strings.HasPrefix(Describe(c, res.Alloc), "t4-") {
		t.Errorf("2 x T4 -> %v %s %s", res.Status, res.Model, res.Message)
	}
	res = e.Place(s, request.Request{GPUs: 16, Tier: topology.TierLeaf})
	if res.Status != Placed || res.Model != "h100" {
		t.Errorf("16 GPUs any model -> %v %s %s", res.Status, res.Model, res.Message)
	}
}

// heteroSpec: a leaf of two DGX H100 and a leaf of four 2-GPU T4 boxes.
func heteroSpec() topology.Spec {
	s := topology.Spec{Name: "mix"}
	for _, n := range []topology.NodeSpec{topotest.DGXH100("dgx1"), topotest.DGXH100("dgx2")} {
		s.Nodes = append(s.Nodes, n)
	}
	for i := 1; i <= 4; i++ {
		s.Nodes = append(s.Nodes, topotest.SmallGPUNode("t4-"+strconv.Itoa(i), "t4", 2))
	}
	s.Leaves = []topology.LeafSpec{{Name: "l1", Nodes: []string{"dgx1", "dgx2"}}, {Name: "l2", Nodes: []string{"t4-1", "t4-2", "t4-3", "t4-4"}}}
	return s
}
