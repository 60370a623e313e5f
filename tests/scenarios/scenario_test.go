package scenarios

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// scenario is one file. Example:
//
//	description: a 32-GPU gang at leaf lands inside one leaf
//	cluster: lab16.yaml            # from docs/examples
//	busy: ["node01:0", "node05:0"] # node:GPU indices (ranges ok) or node:all
//	drain: [node12]
//	request: {gpus: 32, gang_topology: leaf}
//	expect:
//	  status: placed               # placed, no-fit, impossible, invalid
//	  alloc: "node09:0-7,node10:0-7,node11:0-7,node12:0-7"
//	  domain: leaf3
//	  tier: leaf
//	  message: "..."               # substring of Result.Message
type scenario struct {
	Description string   `yaml:"description"`
	Cluster     string   `yaml:"cluster"`
	Busy        []string `yaml:"busy"`
	Shared      []string `yaml:"shared"` // node:gpu:milli-taken
	Drain       []string `yaml:"drain"`
	Request     struct {
		GPUs         int      `yaml:"gpus"`
		Nodes        int      `yaml:"nodes"`
		GPUsPerNode  int      `yaml:"gpus_per_node"`
		Share        int      `yaml:"share"`
		Models       []string `yaml:"models"`
		GangTopology string   `yaml:"gang_topology"`
		CPUsPerGPU   int64    `yaml:"cpus_per_gpu"`
		Partitions   []string `yaml:"partitions"`
		Exclude      []string `yaml:"exclude"`
	} `yaml:"request"`
	Expect struct {
		Status  string `yaml:"status"`
		Alloc   string `yaml:"alloc"`
		Domain  string `yaml:"domain"`
		Tier    string `yaml:"tier"`
		Message string `yaml:"message"`
		Widened bool   `yaml:"widened"`
	} `yaml:"expect"`
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	clusters := map[string]*topology.Cluster{}
	for _, file := range files {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			sc := readScenario(t, file)
			c, ok := clusters[sc.Cluster]
			if !ok {
				c = readCluster(t, sc.Cluster)
				clusters[sc.Cluster] = c
			}
			s := occupancyOf(t, c, sc)
			r := requestOf(t, sc)
			res := place.New(c, place.Options{}).Place(s, r)
			check(t, c, s, &sc, &res)
		})
	}
}

func readScenario(t *testing.T, file string) scenario {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc scenario
	if err := dec.Decode(&sc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if sc.Description == "" || sc.Expect.Status == "" {
		t.Fatalf("%s: description and expect.status are required", file)
	}
	return sc
}

func readCluster(t *testing.T, name string) *topology.Cluster {
	path := filepath.Join("..", "..", "docs", "examples", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func nodeID(t *testing.T, c *topology.Cluster, name string) topology.NodeID {
	id, ok := c.NodeByName(name)
	if !ok {
		t.Fatalf("scenario names unknown node %s", name)
	}
	return id
}

func occupancyOf(t *testing.T, c *topology.Cluster, sc scenario) *occupancy.Snapshot {
	s := occupancy.New(c)
	for _, b := range sc.Busy {
		name, idx, _ := strings.Cut(b, ":")
		id := nodeID(t, c, name)
		gpus := indices(t, idx, c.Nodes[id].NumGPUs())
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sh := range sc.Shared {
		parts := strings.Split(sh, ":")
		g, _ := strconv.Atoi(parts[1])
		m, _ := strconv.Atoi(parts[2])
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: nodeID(t, c, parts[0]), GPUs: []int{g}, Milli: uint16(m)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range sc.Drain {
		s.SetState(nodeID(t, c, d), occupancy.StateDrain)
	}
	return s
}

func indices(t *testing.T, spec string, k int) []int {
	var out []int
	if spec == "all" {
		for i := 0; i < k; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("bad GPU list %q", spec)
		}
		b := a
		if isRange {
			b, _ = strconv.Atoi(hi)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}

func requestOf(t *testing.T, sc scenario) request.Request {
	q := sc.Request
	r := request.Request{GPUs: q.GPUs, Nodes: q.Nodes, GPUsPerNode: q.GPUsPerNode, Milli: q.Share, Models: q.Models,
		CPUMilli: q.CPUsPerGPU * 1000 * int64(q.GPUs), Partitions: q.Partitions, Excluded: q.Exclude}
	if q.GangTopology != "" {
		o, err := request.ParseOption(q.GangTopology)
		if err != nil {
			t.Fatal(err)
		}
		o.Apply(&r)
	}
	return r
}

func check(t *testing.T, c *topology.Cluster, s *occupancy.Snapshot, sc *scenario, res *place.Result) {
	e := sc.Expect
	if res.Status.String() != e.Status {
		t.Fatalf("status %s (%s), want %s", res.Status, res.Message, e.Status)
	}
	if e.Message != "" && !strings.Contains(res.Message, e.Message) {
		t.Errorf("message %q does not contain %q", res.Message, e.Message)
	}
	if res.Status != place.Placed {
		return
	}
	if err := s.Fits(res.Alloc); err != nil || res.Alloc.NumGPUs() != sc.Request.GPUs {
		t.Errorf("allocation %s is not a whole, fitting gang: %v", place.Describe(c, res.Alloc), err)
	}
	if got := place.Describe(c, res.Alloc); e.Alloc != "" && got != e.Alloc {
		t.Errorf("alloc %s, want %s", got, e.Alloc)
	}
	if got := c.Domains[res.Domain].Name; e.Domain != "" && got != e.Domain {
		t.Errorf("domain %s, want %s", got, e.Domain)
	}
	if e.Tier != "" && res.Tier.String() != e.Tier {
		t.Errorf("tier %s, want %s", res.Tier, e.Tier)
	}
	if res.Widened != e.Widened {
		t.Errorf("widened = %v, want %v", res.Widened, e.Widened)
	}
}
