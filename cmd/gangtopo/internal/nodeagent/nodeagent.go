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
	MapDir      string        // node maps go to MapDir/<node>.json
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

	// Runs and Failures count discovery cycles, for the log and metrics.
	Runs, Failures int
}

// New checks cfg and makes an Agent.
func New(cfg Config, log zerolog.Logger) (*Agent, error) {
	if cfg.MapDir == "" {
		return nil, fmt.Errorf("node map directory is required")
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

func (a *Agent) publish(m *discovery.NodeMap) error {
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		return err
	}
	path := filepath.Join(a.cfg.MapDir, m.Node+".json")
	if err := a.writeFile(path, buf.Bytes()); err != nil {
		return err
	}
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
	a.logPublished(m, path)
	return nil
}

// logPublished logs at info level when the hardware picture changed (or on
// the first run), at debug level otherwise.
func (a *Agent) logPublished(m *discovery.NodeMap, path string) {
	stamp := m.Time
	m.Time = time.Time{}
	var cur bytes.Buffer
	m.Encode(&cur) //nolint:errcheck // it encoded a moment ago
	m.Time = stamp
	ev := a.log.Debug()
	msg := "node map published"
	if !bytes.Equal(cur.Bytes(), a.last) {
		ev, msg = a.log.Info(), "node map published (changed)"
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
