package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmgen"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/gate"
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
		plugin, err := gate.NodeFeatures(c, gate.DefaultFeaturePrefix)
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
// (discovery.NodeFile); the lab and the tests write them with
// spank/nodefile. Both must name the same domains, and each must read the
// other's output.
func TestNodeFileWritersAgree(t *testing.T) {
	files, _ := filepath.Glob("../../docs/examples/*.yaml")
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := topology.Parse(f, path)
		f.Close()
		if err != nil {
			continue
		}
		for i := range c.Nodes {
			ours := nodefile.FromCluster(c, topology.NodeID(i))
			theirs, ok := discovery.ClusterDomains(c, c.Nodes[i].Name)
			if !ok {
				t.Fatalf("%s: discovery does not know node %s", path, c.Nodes[i].Name)
			}
			var got []nodefile.Domain
			for _, d := range theirs {
				got = append(got, nodefile.Domain{Tier: d.Tier, Name: d.Name})
			}
			if diff := cmp.Diff(ours.Domains, got); diff != "" {
				t.Errorf("%s node %s domains (-spank/nodefile +discovery):\n%s", filepath.Base(path), c.Nodes[i].Name, diff)
			}
			if _, err := discovery.ParseNodeFile(ours.Render()); err != nil {
				t.Errorf("%s node %s: discovery cannot read spank/nodefile's file: %v", filepath.Base(path), c.Nodes[i].Name, err)
			}
			df := discovery.NodeFile{Node: ours.Node, Domains: theirs}
			if _, err := nodefile.Parse(df.Render()); err != nil {
				t.Errorf("%s node %s: spank/nodefile cannot read discovery's file: %v", filepath.Base(path), c.Nodes[i].Name, err)
			}
		}
	}
}
