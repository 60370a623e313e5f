package controller

import (
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// configWatch is gangtopo.yaml as the duties see it: loaded at start,
// loaded again at a duty round when its modification time changed. A new
// file that does not load is logged and the previous configuration kept,
// as the plugin does. gen counts the configurations taken, so that a duty
// can rebuild what it derived from the last one.
type configWatch struct {
	path  string
	stamp time.Time
	cfg   ctld.Config
	gen   uint64
	log   zerolog.Logger
}

func newConfigWatch(path string, cfg ctld.Config, log zerolog.Logger) *configWatch {
	w := &configWatch{path: path, cfg: cfg, gen: 1, log: log}
	if fi, err := os.Stat(path); err == nil {
		w.stamp = fi.ModTime()
	}
	return w
}

// reload loads the file again when it changed since the last load.
func (w *configWatch) reload() {
	fi, err := os.Stat(w.path)
	if err != nil || fi.ModTime().Equal(w.stamp) {
		return
	}
	w.stamp = fi.ModTime()
	cfg, err := ctld.LoadConfig(w.path)
	if err != nil {
		w.log.Error().Err(err).Str("config", w.path).Msg("gangtopo.yaml changed but does not load; the duties keep the previous configuration")
		return
	}
	w.cfg = cfg
	w.gen++
	w.log.Info().Str("config", w.path).Bool("actions", cfg.Actions.Enabled).Bool("rebind", cfg.Rebind.Enabled).
		Bool("quota", cfg.Quota.Enabled).Msg("gangtopo.yaml reloaded")
}
