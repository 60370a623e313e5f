package ctld

import (
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// An edit of gangtopo.yaml takes effect without a restart; a broken edit
// is reported once and the previous configuration stays.
func TestHolderReloadsConfig(t *testing.T) {
	dir := t.TempDir()
	topo := filepath.Join(dir, "cluster.yaml")
	data, err := os.ReadFile("../../docs/examples/lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(topo, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "gangtopo.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfgPath+".tmp", []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfgPath+".tmp", cfgPath); err != nil {
			t.Fatal(err)
		}
	}
	base := "version: v1\ntopology: " + topo + "\nsnapshot: " + filepath.Join(dir, "s.json") + "\nreload_interval: 20ms\n"
	write(base + "jobs: gang\n")
	var mu sync.Mutex
	var logs []string
	var loaded []jobsubmit.Scope // what onLoad was told, in order
	h, err := Open(cfgPath, func(m string) { mu.Lock(); logs = append(logs, m); mu.Unlock() },
		func(c Config) { mu.Lock(); loaded = append(loaded, c.Jobs); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("timed out waiting for %s; logs: %q", what, logs)
			}
		}
	}
	write(base + "jobs: gpu\n")
	waitFor("jobs: gpu in force", func() bool { return h.Gate().Config().Jobs == jobsubmit.ScopeGPU })
	write(base + "jobs: everything\n")
	waitFor("the broken edit reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(logs, "\n"), `configuration change not applied, the previous one stays`)
	})
	time.Sleep(100 * time.Millisecond) // five more intervals: no second report
	mu.Lock()
	n := strings.Count(strings.Join(logs, "\n"), "not applied")
	mu.Unlock()
	if n != 1 || h.Gate().Config().Jobs != jobsubmit.ScopeGPU {
		t.Errorf("broken edit reported %d times, jobs %q; want once, gpu kept", n, h.Gate().Config().Jobs)
	}
	// the first configuration, then the edit; the broken one never took effect
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]jobsubmit.Scope{jobsubmit.ScopeGang, jobsubmit.ScopeGPU}, loaded); diff != "" {
		t.Errorf("onLoad calls (-want +got):\n%s", diff)
	}
}

// A configuration that does not load when slurmctld starts is not the end:
// jobs pass meanwhile, and the first edit that loads takes effect without a
// restart (scontrol reconfigure does not reload the plugin). Both a broken
// gangtopo.yaml and a missing cluster file are fixed in place.
func TestHolderLoadsAfterFailedStart(t *testing.T) {
	dir := t.TempDir()
	topo := filepath.Join(dir, "cluster.yaml")
	cfgPath := filepath.Join(dir, "gangtopo.yaml")
	replace := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	base := "version: v1\ntopology: " + topo + "\nsnapshot: " + filepath.Join(dir, "s.json") + "\n"
	replace(cfgPath, base+"jobs: everything\n")
	var mu sync.Mutex
	var logs []string
	var loaded []jobsubmit.Scope
	h, err := Open(cfgPath, func(m string) { mu.Lock(); logs = append(logs, m); mu.Unlock() },
		func(c Config) { mu.Lock(); loaded = append(loaded, c.Jobs); mu.Unlock() })
	if h == nil {
		t.Fatalf("no holder after a failed load: %v", err)
	}
	defer h.Close()
	if err == nil || !strings.Contains(err.Error(), `jobs: "everything" is not allowed`) || !strings.Contains(err.Error(), "no restart or reconfigure needed") {
		t.Errorf("error %v; want the configuration's error and that the plugin keeps watching", err)
	}
	if h.Gate() != nil {
		t.Fatal("a gate from a configuration that did not load")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("timed out waiting for %s; logs: %q", what, logs)
			}
		}
	}
	// fixed gangtopo.yaml, but its cluster file does not exist yet
	replace(cfgPath, base+"jobs: gpu\n")
	waitFor("the missing cluster file reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(logs, "\n"), "configuration still not loaded, jobs pass unchanged: topology "+topo)
	})
	data, err := os.ReadFile("../../docs/examples/lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	replace(topo, string(data))
	waitFor("the configuration in force", func() bool { return h.Gate() != nil })
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]jobsubmit.Scope{jobsubmit.ScopeGPU}, loaded); diff != "" {
		t.Errorf("onLoad calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "configuration "+cfgPath+" loaded (topology "+topo+")") {
		t.Errorf("logs %q: want the load reported", logs)
	}
}
