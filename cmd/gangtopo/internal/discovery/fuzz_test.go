package discovery

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeNodeMap: any input either fails or decodes into a map that
// encodes and decodes back to itself.
func FuzzDecodeNodeMap(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "nodemaps", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version":"v1","node":"x","gpus":[],"nvlink":{"links":[]},"pcie":[],"nic_pcie":[],"nics":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := DecodeNodeMap(bytes.NewReader(in), "fuzz.json")
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := m.Encode(&buf); err != nil {
			t.Fatalf("a decoded map does not encode: %v", err)
		}
		back, err := DecodeNodeMap(&buf, "again.json")
		if err != nil {
			t.Fatalf("an encoded map does not decode: %v\n%s", err, buf.String())
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("round trip differs (-first +second):\n%s", diff)
		}
	})
}

// FuzzParseNodeFile: a parsed node file renders to text that parses to the
// same file.
func FuzzParseNodeFile(f *testing.F) {
	f.Add([]byte("gangtopo-node v1\nnode n1\ndomain leaf leaf1\nnvlink n1/nvl0 0-7\nnic mlx5_0 0,3\nnic mlx5_4\n"))
	f.Add([]byte("# c\ngangtopo-node v1 # x\nnode a\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		nf, err := ParseNodeFile(in)
		if err != nil {
			return
		}
		back, err := ParseNodeFile(nf.Render())
		if err != nil {
			t.Fatalf("a rendered node file does not parse: %v\n%s", err, nf.Render())
		}
		if diff := cmp.Diff(normalizeNodeFile(nf), normalizeNodeFile(back)); diff != "" {
			t.Fatalf("round trip differs (-first +second):\n%s", diff)
		}
	})
}

// normalizeNodeFile sorts GPU lists (rendering writes them as sorted
// ranges) and drops duplicates.
func normalizeNodeFile(f NodeFile) NodeFile {
	norm := func(sets []GPUSet) []GPUSet {
		var out []GPUSet
		for _, s := range sets {
			gs, _ := ParseCPUList(formatGPUs(s.GPUs))
			out = append(out, GPUSet{s.Name, gs})
		}
		return out
	}
	f.NVLink, f.NICs = norm(f.NVLink), norm(f.NICs)
	return f
}
