package slurmlab

import (
	"os"
	"path/filepath"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// writeNodeFiles writes the node file of every node of c into dir (the
// SPANK plugin's nodefile_dir=), built from the cluster file alone
// (nodefile.FromCluster): the lab runs no node daemon. Each file is written
// atomically (a temporary file renamed into place), mode 0644.
func writeNodeFiles(c *topology.Cluster, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range c.Nodes {
		f := nodefile.FromCluster(c, topology.NodeID(i))
		if err := writeAtomic(filepath.Join(dir, f.Node), f.Render()); err != nil {
			return err
		}
	}
	return nil
}

// RewriteNodeFiles writes the lab's node files into one node's directory
// again (after a test replaced one).
func (l *Lab) RewriteNodeFiles(node string) error {
	return writeNodeFiles(l.Cluster, l.NodeFileDir(node))
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
