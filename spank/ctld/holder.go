package ctld

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Holder owns the plugin's current Gate and replaces it when gangtopo.yaml
// or the cluster file changes, so an administrator's edit takes effect
// without restarting slurmctld (`scontrol reconfigure` does not reload a
// job_submit plugin whose name did not change). A new configuration that
// does not load is logged and the previous one stays in force. When none
// has loaded yet (a broken file at slurmctld's start), the Holder has no
// gate, jobs pass unchanged, and the watch goes on: the first edit that
// loads takes effect.
type Holder struct {
	path   string
	logf   func(string)
	onLoad func(Config) // told every configuration that takes effect

	mu       sync.Mutex
	cur      *Gate        // nil until a configuration loads
	topoPath string       // the cluster file of the last configuration read
	stamps   [2]fileStamp // config, topology

	stop chan struct{}
	done chan struct{}
}

// Open loads the configuration at path and its topology, starts the gate's
// snapshot reload and the watch on both files. onLoad (may be nil) is
// called with the configuration before Open returns and with every
// reloaded one that takes effect, from the watch goroutine, never after
// Close returned: the C shim keeps a copy of what it needs to decide
// alone (spank/libgangtopo).
//
// A configuration that does not load is returned as the error together
// with a Holder that has no gate yet and keeps watching both files; Close
// it when it is not wanted.
func Open(path string, logf func(string), onLoad func(Config)) (*Holder, error) {
	h := &Holder{path: path, logf: logf, onLoad: onLoad, stop: make(chan struct{}), done: make(chan struct{})}
	g, stamps, topo, err := load(path)
	h.stamps, h.topoPath = stamps, topo
	if err == nil {
		h.cur = g
		if onLoad != nil {
			onLoad(g.cfg)
		}
		g.Start(logf)
	} else {
		err = fmt.Errorf("%w; jobs pass unchanged until it loads: the plugin watches %s and its cluster file and loads them once fixed (no restart or reconfigure needed)", err, path)
	}
	go h.watch()
	return h, err
}

// load reads the configuration and its topology. stamps and topo (the
// cluster file's path) are filled as far as the files were read, also on
// failure, so the watch sees the next edit of either.
func load(path string) (g *Gate, stamps [2]fileStamp, topo string, err error) {
	if fi, err := os.Stat(path); err == nil {
		stamps[0] = stampOf(fi)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, stamps, "", err
	}
	if fi, err := os.Stat(cfg.Topology); err == nil {
		stamps[1] = stampOf(fi)
	}
	g, err = New(cfg)
	return g, stamps, cfg.Topology, err
}

// Gate returns the gate in force.
func (h *Holder) Gate() *Gate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// Close stops the watch and the gate's reload.
func (h *Holder) Close() {
	close(h.stop)
	<-h.done
	if g := h.Gate(); g != nil {
		g.Stop()
	}
}

func (h *Holder) watch() {
	defer close(h.done)
	for {
		every := Defaults().ReloadInterval
		if g := h.Gate(); g != nil {
			every = g.cfg.ReloadInterval
		}
		select {
		case <-h.stop:
			return
		case <-time.After(every):
			h.check()
		}
	}
}

// check reloads when either file's stamp changed. The stamps seen are
// kept even when the new configuration fails to load, so a broken edit is
// reported once, not at every interval.
func (h *Holder) check() {
	h.mu.Lock()
	old, stamps, topo := h.cur, h.stamps, h.topoPath
	h.mu.Unlock()
	var seen [2]fileStamp
	for i, p := range []string{h.path, topo} {
		if fi, err := os.Stat(p); p != "" && err == nil {
			seen[i] = stampOf(fi)
		}
	}
	if seen == stamps {
		return
	}
	h.mu.Lock()
	h.stamps = seen
	h.mu.Unlock()
	g, newStamps, newTopo, err := load(h.path)
	if err != nil {
		h.mu.Lock()
		if newTopo != "" {
			// watch the cluster file the edit names, as far as it was read
			h.topoPath, h.stamps = newTopo, newStamps
		}
		h.mu.Unlock()
		if old == nil {
			h.log(fmt.Sprintf("configuration still not loaded, jobs pass unchanged: %v", err))
		} else {
			h.log(fmt.Sprintf("configuration change not applied, the previous one stays: %v", err))
		}
		return
	}
	g.Start(h.logf)
	h.mu.Lock()
	h.cur, h.stamps, h.topoPath = g, newStamps, newTopo
	h.mu.Unlock()
	if h.onLoad != nil {
		h.onLoad(g.cfg)
	}
	if old == nil {
		h.log(fmt.Sprintf("configuration %s loaded (topology %s)", h.path, g.cfg.Topology))
		return
	}
	old.Stop()
	h.log(fmt.Sprintf("configuration %s reloaded (topology %s)", h.path, g.cfg.Topology))
}

func (h *Holder) log(msg string) {
	if h.logf != nil {
		h.logf(msg)
	}
}
