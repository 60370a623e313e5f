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

// loadState loads the cluster file and the occupancy snapshot on it (an
// empty cluster when statePath is ""), the inputs of every command that
// looks at one moment of the cluster.
func loadState(topologyPath, statePath string) (*topology.Cluster, *occupancy.Snapshot, error) {
	c, err := loadCluster(topologyPath)
	if err != nil {
		return nil, nil, err
	}
	s, err := loadSnapshot(statePath, c)
	if err != nil {
		return nil, nil, err
	}
	return c, s, nil
}
