package slurmstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// seriesCaptures are the outputs captured from each series' lab by the e2e
// test EverySourceGivesOneSnapshot (tests/e2e/series_sources_test.go, with
// GANGTOPO_CAPTURE_DIR): the same state on each (node03 3 GPUs busy,
// node[05-06] all 8, a held 16-GPU job, node16 drained).
var seriesCaptures = []struct {
	dir       string
	nodesJSON string // the JSON node source of that series
}{
	{"slurm-22.05.8", "sinfo.json"},
	{"slurm-24.11.5", "scontrol_nodes.json"},
	{"slurm-26.05.5", "scontrol_nodes.json"},
}

// Every series' JSON and text outputs give one snapshot: the same for the
// JSON and the text sources of a series, and the same on every series.
func TestEverySeriesGivesOneSnapshot(t *testing.T) {
	c := topotest.Lab16()
	var first string
	for _, sc := range seriesCaptures {
		t.Run(sc.dir, func(t *testing.T) {
			nodesFile := filepath.Join(sc.dir, sc.nodesJSON)
			var st State
			var err error
			if sc.nodesJSON == "sinfo.json" {
				st.Nodes, st.Version, err = ParseSinfoJSON(readTestdata(t, nodesFile), nodesFile)
			} else {
				st.Nodes, st.Version, err = ParseScontrolNodesJSON(readTestdata(t, nodesFile), nodesFile)
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(sc.dir, "slurm-"); st.Version != want {
				t.Errorf("release %q, want %q", st.Version, want)
			}
			squeue := filepath.Join(sc.dir, "squeue.json")
			if st.Jobs, _, err = ParseSqueueJSON(readTestdata(t, squeue), squeue); err != nil {
				t.Fatal(err)
			}
			fromJSON, rep, err := BuildSnapshot(c, &st, testTime, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 0 {
				t.Errorf("problems: %v", rep.Lines())
			}
			got := string(encode(t, fromJSON))
			text := stateFromScontrol(t, filepath.Join(sc.dir, "scontrol_nodes.txt"), filepath.Join(sc.dir, "scontrol_jobs.txt"))
			fromText, _, err := BuildSnapshot(c, text, testTime, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, string(encode(t, fromText))); diff != "" {
				t.Errorf("JSON vs text sources (-json +text):\n%s", diff)
			}
			if first == "" {
				first = got
				checkGolden(t, "series.json", []byte(got))
			} else if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("snapshot differs from %s's (-%s +%s):\n%s", seriesCaptures[0].dir, seriesCaptures[0].dir, sc.dir, diff)
			}
		})
	}
}

// From 23.02 on, sinfo --json lists groups of nodes: refused with the
// command that lists nodes, which --nodes-from auto switches to.
func TestGroupedSinfoRefused(t *testing.T) {
	for _, dir := range []string{"slurm-24.11.5", "slurm-26.05.5"} {
		file := filepath.Join(dir, "sinfo.json")
		_, _, err := ParseSinfoJSON(readTestdata(t, file), file)
		var grouped *groupedSinfoError
		if !errors.As(err, &grouped) || !strings.Contains(err.Error(), "scontrol --json show nodes") {
			t.Errorf("%s: got %v, want the grouped-nodes refusal naming scontrol --json show nodes", file, err)
		}
	}
}

// The poll asks for compact JSON (SLURM_JSON=compact, 23.02 and later):
// every series' capture without its indentation gives the snapshot the
// indented one gives.
func TestCompactJSONSameSnapshot(t *testing.T) {
	c := topotest.Lab16()
	for _, sc := range seriesCaptures {
		t.Run(sc.dir, func(t *testing.T) {
			var snaps [2]string
			for i, compact := range []bool{false, true} {
				read := func(name string) []byte {
					data := readTestdata(t, filepath.Join(sc.dir, name))
					if !compact {
						return data
					}
					var b bytes.Buffer
					if err := json.Compact(&b, data); err != nil {
						t.Fatal(err)
					}
					if b.Len() >= len(data) || bytes.Count(b.Bytes(), []byte("\n")) != 0 {
						t.Fatalf("%s: compacting left %d of %d bytes", name, b.Len(), len(data))
					}
					return b.Bytes()
				}
				var st State
				var err error
				if sc.nodesJSON == "sinfo.json" {
					st.Nodes, st.Version, err = ParseSinfoJSON(read(sc.nodesJSON), sc.nodesJSON)
				} else {
					st.Nodes, st.Version, err = ParseScontrolNodesJSON(read(sc.nodesJSON), sc.nodesJSON)
				}
				if err != nil {
					t.Fatal(err)
				}
				if st.Jobs, _, err = ParseSqueueJSON(read("squeue.json"), "squeue.json"); err != nil {
					t.Fatal(err)
				}
				s, _, err := BuildSnapshot(c, &st, testTime, "")
				if err != nil {
					t.Fatal(err)
				}
				snaps[i] = string(encode(t, s))
			}
			if diff := cmp.Diff(snaps[0], snaps[1]); diff != "" {
				t.Errorf("indented vs compact (-indented +compact):\n%s", diff)
			}
		})
	}
}
