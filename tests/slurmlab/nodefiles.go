package slurmlab

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// writeNodeFile writes node n's file, built from the cluster file alone
// (nodefile.FromCluster: the lab runs no node daemon), into dir: the node's
// own node-local directory, which its slurmd and slurmstepd see as the
// SPANK plugin's nodefile_dir (NodeFileDir). Only its own: as on a real
// cluster, no node has another node's file, and the plugin tells a
// multi-node step's domain from the members lines of this one. The file is
// written atomically (a temporary file renamed into place), mode 0644.
func writeNodeFile(c *topology.Cluster, n topology.NodeID, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := nodefile.FromCluster(c, n)
	return writeAtomic(filepath.Join(dir, f.Node), f.Render())
}

// writeNodeFiles writes every node's file into its own directory, dirOf(node).
func writeNodeFiles(c *topology.Cluster, dirOf func(node string) string) error {
	for i := range c.Nodes {
		if err := writeNodeFile(c, topology.NodeID(i), dirOf(c.Nodes[i].Name)); err != nil {
			return err
		}
	}
	return nil
}

// RewriteNodeFiles writes node's own file into its directory again (after
// a test replaced it).
func (l *Lab) RewriteNodeFiles(node string) error {
	id, ok := l.Cluster.NodeByName(node)
	if !ok {
		return fmt.Errorf("no node %s in the lab", node)
	}
	return writeNodeFile(l.Cluster, id, l.NodeFileDir(node))
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
