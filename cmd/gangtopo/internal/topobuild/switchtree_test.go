package topobuild

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// leafView is a Leaf without its source position, for comparisons.
type leafView struct {
	Name, Spine string
	Nodes       []string
}

func view(ls []Leaf) []leafView {
	var out []leafView
	for _, l := range ls {
		out = append(out, leafView{l.Name, l.Spine, l.Nodes})
	}
	return out
}

func TestParseTopologyConfLeaves(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want []leafView
	}{{
		// The stock lab's file: a top switch over two spines; top adds
		// nothing and is dropped.
		name: "top over spines over leaves",
		conf: "SwitchName=leaf1 Nodes=node[01-02]\nSwitchName=leaf2 Nodes=node[03-04]\nSwitchName=leaf3 Nodes=node05\n" +
			"SwitchName=spine1 Switches=leaf[1-2]\nSwitchName=spine2 Switches=leaf3\nSwitchName=top Switches=spine[1-2]\n",
		want: []leafView{{"leaf1", "spine1", []string{"node01", "node02"}}, {"leaf2", "spine1", []string{"node03", "node04"}}, {"leaf3", "spine2", []string{"node05"}}},
	}, {
		name: "one top switch over leaves: no spine tier",
		conf: "SwitchName=l1 Nodes=a[1-2]\nSwitchName=l2 Nodes=b1\nSwitchName=top Switches=l[1-2]\n",
		want: []leafView{{"l1", "", []string{"a1", "a2"}}, {"l2", "", []string{"b1"}}},
	}, {
		// Every leaf under every spine: the spines tell no leaves apart.
		name: "fat tree listing each leaf under both spines",
		conf: "SwitchName=l1 Nodes=a1\nSwitchName=l2 Nodes=a2\nSwitchName=s1 Switches=l[1-2]\nSwitchName=s2 Switches=l[1-2]\n",
		want: []leafView{{"l1", "", []string{"a1"}}, {"l2", "", []string{"a2"}}},
	}, {
		name: "leaves alone, keys in any case, comments and continuation lines",
		conf: "# leaves\nswitchname=l1 NODES=a[1-2] LinkSpeed=100 # first\nSwitchName=l2 \\\n  Nodes=a3\n\n",
		want: []leafView{{"l1", "", []string{"a1", "a2"}}, {"l2", "", []string{"a3"}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := ParseTopologyConf(strings.NewReader(tc.conf), "topology.conf")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, view(tree.Leaves()), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("leaves (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSharedReferenceConf reads the topology.conf the stock-Slurm
// reference runs used (../shared), the same 16-node shape as lab16.yaml.
func TestParseSharedReferenceConf(t *testing.T) {
	const path = "../../../../../shared/data/slurm-22.05-reference/conf/ref1/topology.conf"
	f, err := os.Open(path)
	if err != nil {
		needs.Skip(t, "shared data not here: %v", err)
	}
	defer f.Close()
	tree, err := ParseTopologyConf(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range tree.Leaves() {
		got = append(got, l.Spine+">"+l.Name+":"+strings.Join(l.Nodes, ","))
	}
	want := []string{
		"spine1>leaf1:node01,node02,node03,node04", "spine1>leaf2:node05,node06,node07,node08",
		"spine2>leaf3:node09,node10,node11,node12", "spine2>leaf4:node13,node14,node15,node16",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseTopologyConfErrors(t *testing.T) {
	tests := []struct{ name, conf, want string }{
		{"block plugin line", "BlockName=b1 Nodes=a[1-4]\n", "topology.conf:1: BlockName= is a topology/block line"},
		{"unknown key", "SwitchName=l1 Nodes=a1 Speed=1\n", "topology.conf:1: unknown key Speed= (allowed: SwitchName, Switches, Nodes, LinkSpeed)"},
		{"not key=value", "SwitchName=l1 Nodes\n", `topology.conf:1: "Nodes" is not KEY=VALUE`},
		{"line not starting with SwitchName", "Nodes=a1 SwitchName=l1\n", "topology.conf:1: a line must start with SwitchName=, got Nodes="},
		{"nodes and switches", "SwitchName=l1 Nodes=a1 Switches=l2\n", "topology.conf:1: switch l1 has both Nodes= and Switches="},
		{"neither", "SwitchName=l1 LinkSpeed=1\n", "topology.conf:1: switch l1 has neither Nodes= nor Switches="},
		{"key twice", "SwitchName=l1 Nodes=a1 nodes=a2\n", "topology.conf:1: nodes= given twice"},
		{"bad host list", "SwitchName=l1 Nodes=a[1-\n", "topology.conf:1: Nodes=:"},
		{"duplicate switch", "SwitchName=l1 Nodes=a1\nSwitchName=l1 Nodes=a2\n", "topology.conf:2: switch l1 is already defined at topology.conf:1"},
		{"undefined child", "SwitchName=l1 Nodes=a1\nSwitchName=s1 Switches=l[1-2]\n", "topology.conf:2: switch s1 lists child switch l2, which is not defined"},
		{"node under two leaves", "SwitchName=l1 Nodes=a[1-2]\nSwitchName=l2 Nodes=a2\n", "topology.conf:2: node a2 is under two leaf switches, l1 and l2"},
		{"cycle", "SwitchName=l1 Nodes=a1\nSwitchName=s1 Switches=s2,l1\nSwitchName=s2 Switches=s1\n", "topology.conf: switches form a cycle: s1 > s2 > s1"},
		{"empty", "# nothing\n", "topology.conf: no switch has nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopologyConf(strings.NewReader(tc.conf), "topology.conf")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseIBNetDiscover(t *testing.T) {
	tests := []struct {
		file string
		want []leafView
	}{{
		// Two pods (agg1/agg2 over leafA/B, agg3/agg4 over leafC/D) under a
		// core: the pods are the spine domains.
		file: "pods.txt",
		want: []leafView{
			{"leaf01", "spine01", []string{"node01", "node02"}}, {"leaf02", "spine01", []string{"node03", "node04"}},
			{"leaf03", "spine02", []string{"node05", "node06"}}, {"leaf04", "spine02", []string{"node07", "node08"}},
		},
	}, {
		// Every host reaches both rail switches of its unit: the unit is the
		// leaf domain; both units reach both spines, so no spine tier.
		file: "rails.txt",
		want: []leafView{{"leaf01", "", []string{"gpu01", "gpu02", "gpu03", "gpu04"}}, {"leaf02", "", []string{"gpu05", "gpu06", "gpu07", "gpu08"}}},
	}}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open("testdata/ibnet/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tree, err := ParseIBNetDiscover(f, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, view(tree.Leaves())); diff != "" {
				t.Errorf("leaves (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseIBNetDiscoverErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not a dump", "hello\n", "dump.txt: no Switch entries; is this ibnetdiscover output?"},
		{"bad header", "Switch 36 S-xyz\n", `dump.txt:1: cannot read node header "Switch 36 S-xyz"`},
		{"bad port", "Switch\t36 \"S-0002c903007b7a40\"\t\t# \"sw\"\n[1] garbage\n", `dump.txt:2: cannot read port line "[1] garbage"`},
		{"switch without hosts", "Switch\t36 \"S-0002c903007b7a40\"\t\t# \"sw\"\n", "dump.txt: no switch has a host (HCA) on its ports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseIBNetDiscover(strings.NewReader(tc.in), "dump.txt")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
