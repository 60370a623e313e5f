package nodeagent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// Config is the node role's configuration.
type Config struct {
	// MapDir receives the node map as <node>.json, for `topology build`;
	// "" writes none. It is usually shared, and may fail (NFS with
	// root_squash) without keeping the node file from being written.
	MapDir      string
	NodeFileDir string        // node files go to NodeFileDir/<node>; "" writes none
	Interval    time.Duration // between discoveries
	// Discover runs one discovery (discovery.Discover with the daemon's
	// options; tests substitute mocks).
	Discover func() (*discovery.NodeMap, error)
	// Domains gives the node's domains for the node file (from the cluster
	// file, nodefile.DomainsOf); nil means none. An error is logged and the
	// file written without domain lines, since NCCL_IB_HCA does not depend
	// on them.
	Domains func(node string) ([]nodefile.Domain, error)
	// Publish says how files are written (see package publish).
	Publish publish.Options
}

// Agent publishes one node's maps.
type Agent struct {
	cfg  Config
	log  zerolog.Logger
	last []byte // the last published map without its time stamp

	// Runs and Failures count discovery cycles, for the log and metrics;
	// MapFailures the cycles whose node map could not be written (the node
	// file was, and the cycle counts as a success).
	Runs, Failures, MapFailures int
	lastMapErr                  string
}

// New checks cfg and makes an Agent.
func New(cfg Config, log zerolog.Logger) (*Agent, error) {
	if cfg.MapDir == "" && cfg.NodeFileDir == "" {
		return nil, fmt.Errorf("nothing to publish: give a node file directory, a node map directory, or both")
	}
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("interval must be positive, got %v", cfg.Interval)
	}
	if cfg.Discover == nil {
		return nil, fmt.Errorf("no discovery function")
	}
	return &Agent{cfg: cfg, log: log}, nil
}

// Once runs one discovery and publishes its result.
func (a *Agent) Once() error {
	a.Runs++
	m, err := a.cfg.Discover()
	if err != nil {
		a.Failures++
		return err
	}
	if err := a.publish(m); err != nil {
		a.Failures++
		return err
	}
	return nil
}

// publish writes the node file, then the node map. The node file is what
// jobs on this node need (NCCL_IB_HCA, the GANGTOPO_* variables) and lives
// in a local directory; the map only feeds `topology build`, usually
// through a shared directory that can fail on its own (NFS with
// root_squash, a mount that is down). A map that cannot be written is
// logged as a warning, when its error changes, and does not fail the
// cycle.
func (a *Agent) publish(m *discovery.NodeMap) error {
	if a.cfg.NodeFileDir != "" {
		var domains []nodefile.Domain
		if a.cfg.Domains != nil {
			var err error
			if domains, err = a.cfg.Domains(m.Node); err != nil {
				a.log.Warn().Err(err).Msg("node file written without domain lines")
			}
		}
		nf := discovery.BuildNodeFile(m, domains).RenderWithComment(discovery.NodeFileComment)
		if err := a.writeFile(filepath.Join(a.cfg.NodeFileDir, m.Node), nf); err != nil {
			return err
		}
	}
	path := ""
	if a.cfg.MapDir != "" {
		path = filepath.Join(a.cfg.MapDir, m.Node+".json")
		if err := a.publishMap(m, path); err != nil {
			a.MapFailures++
			if err.Error() != a.lastMapErr {
				a.log.Warn().Err(err).Str("node_map_dir", a.cfg.MapDir).Msg("node map not written (the node file was): " + mapHint)
			}
			a.lastMapErr = err.Error()
			path = ""
		} else {
			a.lastMapErr = ""
		}
	}
	a.logPublished(m, path)
	return nil
}

// mapHint says what to do when the node map directory fails.
const mapHint = "on NFS with root_squash the daemon (root) can neither own nor write a shared directory: give it a local --node-map-dir and collect the maps where `gangtopo topology build` runs, or leave --node-map-dir out and run `gangtopo discover > <node>.json` on each node when building"

func (a *Agent) publishMap(m *discovery.NodeMap, path string) error {
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		return err
	}
	return a.writeFile(path, buf.Bytes())
}

// logPublished logs at info level when the hardware picture changed (or on
// the first run), at debug level otherwise; path is the node map's, "" when
// none was written.
func (a *Agent) logPublished(m *discovery.NodeMap, path string) {
	stamp := m.Time
	m.Time = time.Time{}
	var cur bytes.Buffer
	m.Encode(&cur) //nolint:errcheck // it encoded a moment ago
	m.Time = stamp
	ev := a.log.Debug()
	msg := "node map published"
	if path == "" {
		msg = "node file published"
	}
	if !bytes.Equal(cur.Bytes(), a.last) {
		ev, msg = a.log.Info(), msg+" (changed)"
		for _, w := range m.Warnings {
			a.log.Warn().Str("node", m.Node).Msg(w)
		}
	}
	a.last = cur.Bytes()
	ev.Str("node", m.Node).Str("path", path).Str("node_file_dir", a.cfg.NodeFileDir).Int("gpus", len(m.GPUs)).
		Int("nics", len(m.NICs)).Str("nvlink", m.NVLink.Mode).Str("gpu_source", m.GPUSource).Msg(msg)
}

// writeFile publishes one file: atomically, creating its directory.
func (a *Agent) writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	return publish.WriteFile(path, a.cfg.Publish, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
