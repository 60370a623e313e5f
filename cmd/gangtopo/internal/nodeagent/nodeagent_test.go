package nodeagent

import (
	"bytes"
	"errors"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
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

// The node file does not depend on the shared node map directory: where
// that directory cannot be written (here a directory owned by another
// user, as root's view of an NFS export with root_squash; or a path that
// is a file), the node file is written all the same, the cycle succeeds,
// and the map's failure is logged once with what to do.
func TestNodeFileWrittenWhenMapDirFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mapDir func(t *testing.T, dir string) string
	}{
		{"map directory is a file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "not-a-dir")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "maps")
		}},
		{"map directory of another user", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "shared")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() != 0 {
				needs.Skip(t, "needs root to give the directory away")
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			node := &fakeNode{}
			var logs bytes.Buffer
			a, err := New(Config{MapDir: tc.mapDir(t, dir), NodeFileDir: filepath.Join(dir, "nodes"), Interval: time.Second,
				Discover: node.discover}, zerolog.New(&logs))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if err := a.Once(); err != nil {
					t.Fatalf("cycle %d: %v", i, err)
				}
			}
			nf, err := os.ReadFile(filepath.Join(dir, "nodes", "cpu1"))
			if err != nil {
				t.Fatalf("no node file: %v", err)
			}
			if f, err := nodefile.Parse(nf); err != nil || f.Node != "cpu1" {
				t.Errorf("node file %q: %+v, %v", nf, f, err)
			}
			if a.MapFailures != 2 || a.Failures != 0 || strings.Count(logs.String(), "node map not written (the node file was)") != 1 ||
				!strings.Contains(logs.String(), "root_squash") {
				t.Errorf("map failures %d, failures %d, logs:\n%s\nwant 2 map failures, no failed cycle, one warning with the root_squash hint",
					a.MapFailures, a.Failures, logs.String())
			}
		})
	}
}

// --node-map-dir is optional: only `topology build` reads node maps.
func TestNodeFileWithoutMapDir(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{NodeFileDir: dir, Interval: time.Second, Discover: (&fakeNode{}).discover}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Once(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu1")); err != nil {
		t.Error(err)
	}
	if _, err := New(Config{Interval: time.Second, Discover: (&fakeNode{}).discover}, zerolog.Nop()); err == nil {
		t.Error("an agent that publishes nothing was accepted")
	}
}
