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
