package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/nodeagent"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmgen"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// The job_submit plugin binds gangs with the features `gangtopo gen
// features` puts on the nodes: for every example cluster, the domain
// features of both must be the same.
func TestGenFeaturesMatchThePlugin(t *testing.T) {
	files, _ := filepath.Glob("../../docs/examples/*.yaml")
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := topology.Parse(f, path)
		f.Close()
		if err != nil {
			continue // not a cluster file (gangtopo.yaml)
		}
		plugin, err := jobsubmit.NodeFeatures(c, jobsubmit.DefaultFeaturePrefix)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		models := map[string]bool{}
		for _, m := range c.Models {
			models[slurmgen.FeaturePrefix+m] = true
		}
		for i := range c.Nodes {
			gen, err := slurmgen.NodeFeatures(c, &c.Nodes[i])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var domains []string
			for _, f := range gen {
				if strings.HasPrefix(f, slurmgen.FeaturePrefix) && !models[f] {
					domains = append(domains, f)
				}
			}
			want := append([]string(nil), plugin[i]...)
			sort.Strings(domains)
			sort.Strings(want)
			if diff := cmp.Diff(want, domains); diff != "" {
				t.Errorf("%s node %s (-plugin +gen features):\n%s", filepath.Base(path), c.Nodes[i].Name, diff)
			}
		}
	}
}

// The node daemon writes the node files the SPANK plugin reads
// (discovery.BuildNodeFile, rendered by spank/nodefile, domains from the
// cluster file through nodefile.DomainsOf); the lab and the tests write
// them from the cluster file alone (nodefile.FromCluster). For every node
// of every example cluster, DomainsOf must name FromCluster's domains and
// FromCluster's file must parse; for the first and last node of each (a
// full daemon run per node would take seconds), the daemon's own file must
// parse with nodefile.Parse and name the same node and domains.
func TestNodeDaemonFilesMatchTheClusterFile(t *testing.T) {
	files, _ := filepath.Glob("../../docs/examples/*.yaml")
	clusters := 0
	for _, path := range files {
		c, err := loadCluster(path)
		if err != nil {
			continue // not a cluster file (gangtopo.yaml)
		}
		clusters++
		for i := range c.Nodes {
			want := nodefile.FromCluster(c, topology.NodeID(i))
			if _, err := nodefile.Parse(want.Render()); err != nil {
				t.Errorf("%s node %s: FromCluster's file does not parse: %v", filepath.Base(path), want.Node, err)
			}
			got, ok := nodefile.DomainsOf(c, want.Node)
			if diff := cmp.Diff(want.Domains, got); !ok || diff != "" {
				t.Errorf("%s node %s: found %v, domains (-FromCluster +DomainsOf):\n%s", filepath.Base(path), want.Node, ok, diff)
			}
		}
		for _, i := range []int{0, len(c.Nodes) - 1} {
			want := nodefile.FromCluster(c, topology.NodeID(i))
			got := runNodeDaemon(t, path, want.Node)
			if diff := cmp.Diff(want.Node, got.Node); diff != "" {
				t.Errorf("%s node %s: node (-FromCluster +daemon):\n%s", filepath.Base(path), want.Node, diff)
			}
			if diff := cmp.Diff(want.Domains, got.Domains); diff != "" {
				t.Errorf("%s node %s: domains (-FromCluster +daemon):\n%s", filepath.Base(path), want.Node, diff)
			}
		}
	}
	if clusters == 0 {
		t.Fatal("no example cluster files in docs/examples")
	}
}

// runNodeDaemon runs one cycle of the node daemon for node, with DGX H100
// hardware and --topology cluster, and parses the node file it wrote.
func runNodeDaemon(t *testing.T, cluster, node string) nodefile.File {
	t.Helper()
	hw := nodeMapFixture(t, "dgx-h100.json")
	hw.Node = node
	dir := t.TempDir()
	a, err := nodeagent.New(nodeagent.Config{
		MapDir: filepath.Join(dir, "maps"), NodeFileDir: filepath.Join(dir, "nodes"), Interval: time.Minute,
		Discover: func() (*discovery.NodeMap, error) { return hw, nil },
		// as nodeRole wires --topology
		Domains: func(node string) ([]nodefile.Domain, error) { return clusterDomains(cluster, node) },
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Once(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "nodes", node))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nodefile.Parse(data)
	if err != nil {
		t.Fatalf("%s node %s: the daemon's file does not parse: %v\n%s", filepath.Base(cluster), node, err, data)
	}
	return f
}

// nodeMapFixture decodes one of package discovery's golden node maps.
func nodeMapFixture(t *testing.T, name string) *discovery.NodeMap {
	t.Helper()
	path := filepath.Join("internal", "discovery", "testdata", "nodemaps", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := discovery.DecodeNodeMap(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
