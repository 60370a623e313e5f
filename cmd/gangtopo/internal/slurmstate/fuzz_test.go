package slurmstate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// The scanner accepts exactly what encoding/json calls valid JSON.
func FuzzJSONSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,-0,true,false,null,"x\u00e9\n"]}`, `[]`, `"\ud83d\ude00"`, `{"a":}`, `01`, `1.`, `"\x01"`, `[1,]`, `{"a" 1}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Add(compactSeed(f, "sinfo.json", "nodes"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &jsonScanner{data: data}
		err := s.skip()
		if err == nil {
			err = s.end()
		}
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid = %v, scanner error = %v", valid, err)
		}
	})
}

// Strings decode as encoding/json decodes them.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"tab\tquote\"slash\/"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		stdErr := json.Unmarshal(data, &want)
		s := &jsonScanner{data: data}
		got, err := s.str()
		if err == nil {
			err = s.end()
		}
		if (stdErr == nil) != (err == nil) {
			if stdErr == nil && bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
				return // encoding/json leaves the string alone on null; we read ""
			}
			t.Fatalf("encoding/json error %v, scanner error %v", stdErr, err)
		}
		if err == nil && got != want {
			t.Fatalf("scanner %q, encoding/json %q", got, want)
		}
	})
}

func FuzzParseSinfoJSON(f *testing.F) {
	f.Add(compactSeed(f, "sinfo.json", "nodes"))
	f.Add(compactSeed(f, "sinfo_handmade.json", "nodes"))
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, _, err := ParseSinfoJSON(data, "sinfo --json")
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatal("accepted invalid JSON")
		}
		checkNodes(t, nodes)
	})
}

func FuzzParseSqueueJSON(f *testing.F) {
	f.Add(compactSeed(f, "squeue.json", "jobs"))
	f.Add(compactSeed(f, "squeue_handmade.json", "jobs"))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, _, err := ParseSqueueJSON(data, "squeue --json")
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatal("accepted invalid JSON")
		}
		checkJobs(t, jobs)
	})
}

func FuzzParseGres(f *testing.F) {
	for _, s := range []string{"gpu:8", "gpu:h100:3(IDX:0-1,6),gpu:a100:0(IDX:N/A),shard:0", "gpu:(null):4(IDX:0-3)", "gpu(CNT:4)", "gpu:h100:8(S:0-1)", "shard:2(IDX:0,3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGres(s)
		if err != nil {
			return
		}
		for _, g := range gs {
			for i, x := range g.Idx {
				if x < 0 || x > maxGresIndex || i > 0 && x <= g.Idx[i-1] {
					t.Fatalf("%q: indices %v not ascending in range", s, g.Idx)
				}
			}
		}
	})
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"IDLE", "MIXED+DRAIN", "DOWN*+DRAIN", "idle~", "IDLE+CLOUD+POWERED_DOWN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err == nil && st > occupancy.StateDown {
			t.Fatalf("%q maps to %v", s, st)
		}
	})
}

// Whatever scontrol prints, a snapshot built from it encodes and decodes
// under the strict snapshot reader: the daemon never publishes a file the
// plugin would refuse.
func FuzzBuildFromScontrol(f *testing.F) {
	nodes := bytes.SplitAfter(readTestdata(f, "scontrol_nodes_handmade.txt"), []byte("\n"))
	jobs := bytes.SplitAfter(readTestdata(f, "scontrol_jobs_handmade.txt"), []byte("\n\n"))
	f.Add(bytes.Join(nodes[:2], nil), jobs[0]) // small seeds: the fuzzer minimises slowly
	f.Add(readTestdata(f, "scontrol_show_node_d_o_busy.txt"), readTestdata(f, "scontrol_show_job_d.txt"))
	c := lab8(f)
	f.Fuzz(func(t *testing.T, nodeText, jobText []byte) {
		nodes, err := ParseScontrolNodes(nodeText, "nodes")
		if err != nil {
			return
		}
		checkNodes(t, nodes)
		jobs, bad, err := ParseScontrolJobs(jobText, "jobs")
		if err != nil {
			return
		}
		checkJobs(t, jobs)
		s, _, err := BuildSnapshot(c, &State{Nodes: nodes, Jobs: jobs, Unreadable: bad}, testTime, "")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := s.Encode(&buf, "fuzz"); err != nil {
			t.Fatal(err)
		}
		if _, err := occupancy.Decode(&buf, "fuzz.json", c); err != nil {
			t.Fatalf("built snapshot does not decode: %v", err)
		}
	})
}

// compactSeed is a testdata file cut to the last element of its list, without
// indentation: the fuzzer minimises new inputs, which takes minutes on the
// 10 KB originals.
func compactSeed(f *testing.F, name, list string) []byte {
	var doc map[string]any
	if err := json.Unmarshal(readTestdata(f, name), &doc); err != nil {
		f.Fatal(err)
	}
	items := doc[list].([]any)
	doc[list] = items[len(items)-1:]
	out, err := json.Marshal(doc)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func checkNodes(t *testing.T, nodes []Node) {
	t.Helper()
	for _, n := range nodes {
		if n.Name == "" || n.GPUsUsed > n.GPUs || n.AllocCPUs > n.CPUs || n.State > occupancy.StateDown {
			t.Fatalf("bad node %+v", n)
		}
	}
}

func checkJobs(t *testing.T, jobs []Job) {
	t.Helper()
	for _, j := range jobs {
		if holds, _ := jobHolds(j.State); !holds || len(j.Nodes) == 0 {
			t.Fatalf("job %s (%s) kept without nodes or not holding", j.ID, j.State)
		}
	}
}

// plain8 agrees with the byte table on every byte value in every position.
func TestPlain8(t *testing.T) {
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			word := []byte("abcdefgh")
			word[pos] = byte(c)
			want := true
			for _, b := range word {
				want = want && isPlain[b]
			}
			if got := plain8(binary.LittleEndian.Uint64(word)); got != want {
				t.Fatalf("plain8(%q) = %v, want %v", word, got, want)
			}
		}
	}
}
