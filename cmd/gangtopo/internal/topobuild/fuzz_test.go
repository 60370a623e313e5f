package topobuild

import (
	"os"
	"strings"
	"testing"
)

// FuzzParseTopologyConf: any input either fails with an error or gives a
// tree whose leaves all have nodes and whose Leaves() does not panic.
func FuzzParseTopologyConf(f *testing.F) {
	for _, s := range []string{
		"SwitchName=leaf1 Nodes=node[01-04]\nSwitchName=spine1 Switches=leaf1\n",
		"SwitchName=l1 Nodes=a[1-2] \\\n LinkSpeed=1 # c\nSwitchName=t Switches=l1\n",
		"BlockName=b1 Nodes=a1\n",
		"SwitchName=s1 Switches=s2\nSwitchName=s2 Switches=s1\nSwitchName=l Nodes=x\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tree, err := ParseTopologyConf(strings.NewReader(in), "fuzz.conf")
		if err != nil {
			return
		}
		for _, l := range tree.Leaves() {
			if len(l.Nodes) == 0 {
				t.Fatalf("leaf %s without nodes from %q", l.Name, in)
			}
		}
	})
}

// FuzzParseIBNetDiscover: no panic; a parsed fabric has leaves with hosts.
func FuzzParseIBNetDiscover(f *testing.F) {
	for _, name := range []string{"testdata/ibnet/pods.txt", "testdata/ibnet/rails.txt"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Switch\t36 \"S-0002c903007b7a40\"\t\t# \"sw\"\n[1]\t\"H-0002c9030045f0a0\"[1](2c9030045f0a1) \t\t# \"n1 HCA-1\" lid 3 4xFDR\n")
	f.Fuzz(func(t *testing.T, in string) {
		tree, err := ParseIBNetDiscover(strings.NewReader(in), "fuzz.txt")
		if err != nil {
			return
		}
		for _, l := range tree.Leaves() {
			if len(l.Nodes) == 0 {
				t.Fatalf("leaf %s without hosts", l.Name)
			}
		}
	})
}
