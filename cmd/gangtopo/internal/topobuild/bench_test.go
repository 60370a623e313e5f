package topobuild

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
)

// BenchmarkMergeAndWrite4096 merges 4,096 DGX H100 node maps under 128
// leaves and 8 spines and writes the cluster file: what the controller
// does when node maps change.
func BenchmarkMergeAndWrite4096(b *testing.B) {
	proto := nodeMap(b, "dgx-h100", "x")
	var maps []*discovery.NodeMap
	var conf strings.Builder
	for l := 0; l < 128; l++ {
		fmt.Fprintf(&conf, "SwitchName=leaf%03d Nodes=dgx[%04d-%04d]\n", l, l*32, l*32+31)
	}
	for s := 0; s < 8; s++ {
		fmt.Fprintf(&conf, "SwitchName=spine%d Switches=leaf[%03d-%03d]\n", s, s*16, s*16+15)
	}
	for i := 0; i < 4096; i++ {
		m := *proto
		m.Node = fmt.Sprintf("dgx%04d", i)
		maps = append(maps, &m)
	}
	tree, err := ParseTopologyConf(strings.NewReader(conf.String()), "topology.conf")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Merge(maps, tree, MergeOptions{Name: "big"})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteClusterYAML(&buf, res.Spec, "bench", res.Comments); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(buf.Len()))
	}
}
