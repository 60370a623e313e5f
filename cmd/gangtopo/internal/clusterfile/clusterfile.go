package clusterfile

import (
	"fmt"
	"os"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Load reads and builds the cluster file at path.
func Load(path string) (*topology.Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--topology: %w", err)
	}
	defer f.Close()
	return topology.Parse(f, path)
}

// Watched is a cluster file that Reload re-reads when its size or
// modification time changed.
type Watched struct {
	Path    string
	Cluster *topology.Cluster
	size    int64
	mtime   time.Time
}

// Watch loads path.
func Watch(path string) (*Watched, error) {
	w := &Watched{Path: path}
	if _, err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// Reload re-reads the file if its size or time changed and reports whether
// the topology did (a touched but equal file is no change). On an error the
// previous cluster stays.
func (w *Watched) Reload() (changed bool, err error) {
	fi, err := os.Stat(w.Path)
	if err != nil {
		return false, fmt.Errorf("--topology: %w", err)
	}
	if w.Cluster != nil && fi.Size() == w.size && fi.ModTime().Equal(w.mtime) {
		return false, nil
	}
	c, err := Load(w.Path)
	if err != nil {
		return false, err
	}
	changed = w.Cluster == nil || c.Hash != w.Cluster.Hash
	w.Cluster, w.size, w.mtime = c, fi.Size(), fi.ModTime()
	return changed, nil
}
