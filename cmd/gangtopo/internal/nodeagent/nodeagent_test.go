package nodeagent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// fakeNode discovers the no-NIC test host of package discovery as CPU-only,
// or fails when fail is set.
type fakeNode struct {
	fail  bool
	calls int
}

func (f *fakeNode) discover() (*discovery.NodeMap, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("NVML: GPU is lost")
	}
	return discovery.Discover(discovery.WithGPULib(discovery.Null{Reason: "test"}),
		discovery.WithSysfs("../discovery/testdata/sysfs/no-nic"), discovery.WithNodeName("cpu1"),
		discovery.WithClock(func() time.Time { return time.Date(2025, 1, 2, 0, 0, f.calls, 0, time.UTC) }))
}

func TestOncePublishesAndKeepsLastGoodOnFailure(t *testing.T) {
	dir := t.TempDir()
	node := &fakeNode{}
	var logs bytes.Buffer
	a, err := New(Config{MapDir: filepath.Join(dir, "maps"), NodeFileDir: filepath.Join(dir, "nodes"), Interval: time.Second, Discover: node.discover}, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Once(); err != nil {
		t.Fatal(err)
	}
	mapPath := filepath.Join(dir, "maps", "cpu1.json")
	good, err := os.ReadFile(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(mapPath)
	m, err := discovery.DecodeNodeMap(f, mapPath)
	f.Close()
	if err != nil || m.Node != "cpu1" || !m.CPUOnly() {
		t.Fatalf("published map: %+v, %v", m, err)
	}
	nf, err := os.ReadFile(filepath.Join(dir, "nodes", "cpu1"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := nodefile.Parse(nf); err != nil || f.Node != "cpu1" {
		t.Fatalf("node file %q: %+v, %v", nf, f, err)
	}

	node.fail = true
	if err := a.Once(); err == nil {
		t.Fatal("want the discovery error")
	}
	if now, _ := os.ReadFile(mapPath); !bytes.Equal(now, good) {
		t.Error("a failed discovery changed the published map")
	}
	if a.Runs != 2 || a.Failures != 1 {
		t.Errorf("runs %d failures %d, want 2 and 1", a.Runs, a.Failures)
	}
}

func TestRepeatedOnceLogsChangesOnly(t *testing.T) {
	node := &fakeNode{}
	var logs bytes.Buffer
	a, err := New(Config{MapDir: t.TempDir(), Interval: 10 * time.Millisecond, Discover: node.discover}, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := a.Once(); err != nil {
			t.Fatal(err)
		}
	}
	// The map only changes its time stamp: one info line, the rest debug.
	if got := strings.Count(logs.String(), "(changed)"); got != 1 {
		t.Errorf("%d 'changed' log lines, want 1:\n%s", got, logs.String())
	}
}

func TestNewChecksConfig(t *testing.T) {
	d := (&fakeNode{}).discover
	for _, c := range []Config{{Interval: time.Second, Discover: d}, {MapDir: "x", Discover: d}, {MapDir: "x", Interval: time.Second}} {
		if _, err := New(c, zerolog.Nop()); err == nil {
			t.Errorf("New(%+v): want an error", c)
		}
	}
}
