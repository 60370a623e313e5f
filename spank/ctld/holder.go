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
// does not load is logged and the previous one stays in force.
type Holder struct {
	path   string
	logf   func(string)
	onLoad func(Config) // told every configuration that takes effect

	mu     sync.Mutex
	cur    *Gate
	stamps [2]fileStamp // config, topology

	stop chan struct{}
	done chan struct{}
}

// Open loads the configuration at path and its topology, starts the gate's
// snapshot reload and the watch on both files. onLoad (may be nil) is
// called with the configuration before Open returns and with every
// reloaded one that takes effect, from the watch goroutine, never after
// Close returned: the C shim keeps a copy of what it needs to decide
// alone (spank/libgangtopo).
func Open(path string, logf func(string), onLoad func(Config)) (*Holder, error) {
	g, stamps, err := load(path)
	if err != nil {
		return nil, err
	}
	h := &Holder{path: path, logf: logf, onLoad: onLoad, cur: g, stamps: stamps,
		stop: make(chan struct{}), done: make(chan struct{})}
	if onLoad != nil {
		onLoad(g.cfg)
	}
	g.Start(logf)
	go h.watch()
	return h, nil
}

func load(path string) (*Gate, [2]fileStamp, error) {
	var stamps [2]fileStamp
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, stamps, err
	}
	for i, p := range []string{path, cfg.Topology} {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, stamps, err
		}
		stamps[i] = stampOf(fi)
	}
	g, err := New(cfg)
	return g, stamps, err
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
	h.Gate().Stop()
}

func (h *Holder) watch() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case <-time.After(h.Gate().cfg.ReloadInterval):
			h.check()
		}
	}
}

// check reloads when either file's stamp changed. The stamps seen are
// kept even when the new configuration fails to load, so a broken edit is
// reported once, not at every interval.
func (h *Holder) check() {
	h.mu.Lock()
	old, stamps := h.cur, h.stamps
	h.mu.Unlock()
	var seen [2]fileStamp
	for i, p := range []string{h.path, old.cfg.Topology} {
		if fi, err := os.Stat(p); err == nil {
			seen[i] = stampOf(fi)
		}
	}
	if seen == stamps {
		return
	}
	h.mu.Lock()
	h.stamps = seen
	h.mu.Unlock()
	g, newStamps, err := load(h.path)
	if err != nil {
		h.log(fmt.Sprintf("configuration change not applied, the previous one stays: %v", err))
		return
	}
	g.Start(h.logf)
	h.mu.Lock()
	h.cur, h.stamps = g, newStamps
	h.mu.Unlock()
	if h.onLoad != nil {
		h.onLoad(g.cfg)
	}
	old.Stop()
	h.log(fmt.Sprintf("configuration %s reloaded (topology %s)", h.path, g.cfg.Topology))
}

func (h *Holder) log(msg string) {
	if h.logf != nil {
		h.logf(msg)
	}
}
