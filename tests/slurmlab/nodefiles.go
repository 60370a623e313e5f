package slurmlab

import (
	"os"
	"path/filepath"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// writeNodeFiles writes the node file of every node of c, built from the
// cluster file alone (nodefile.FromCluster: the lab runs no node daemon),
// each into a directory of its own, dir/<node>/<node>, as a real cluster
// has them in each node's local /var/lib/gangtopo/nodes: the SPANK plugin
// reads nodefile_dir=dir/%n, so a node sees no other node's file. Each file
// is written atomically (a temporary file renamed into place), mode 0644.
func writeNodeFiles(c *topology.Cluster, dir string) error {
	for i := range c.Nodes {
		f := nodefile.FromCluster(c, topology.NodeID(i))
		local := filepath.Join(dir, f.Node)
		if err := os.MkdirAll(local, 0o755); err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(local, f.Node), f.Render()); err != nil {
			return err
		}
	}
	return nil
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
