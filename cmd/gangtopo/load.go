package main

import (
	"os"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// loadCluster reads a cluster file; any problem is the user's to fix.
func loadCluster(path string) (*topology.Cluster, error) {
	if path == "" {
		return nil, usagef("--topology is required (a cluster file, see docs/cluster-file.md)")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, asUsage(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, path)
	return c, asUsage(err)
}

// loadSnapshot reads an occupancy snapshot of c; "" means an empty cluster.
func loadSnapshot(path string, c *topology.Cluster) (*occupancy.Snapshot, error) {
	if path == "" {
		return occupancy.New(c), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, asUsage(err)
	}
	defer f.Close()
	s, err := occupancy.Decode(f, path, c)
	return s, asUsage(err)
}
