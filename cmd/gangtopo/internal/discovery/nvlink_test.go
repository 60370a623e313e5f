package discovery

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveNVLinks(t *testing.T) {
	ids := []string{"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}
	gpu := func(j, n int) []NVLinkEnd {
		var out []NVLinkEnd
		for k := 0; k < n; k++ {
			out = append(out, NVLinkEnd{Remote: RemoteGPU, RemoteBusID: ids[j]})
		}
		return out
	}
	sw := func(n int) []NVLinkEnd {
		var out []NVLinkEnd
		for k := 0; k < n; k++ {
			out = append(out, NVLinkEnd{Remote: RemoteSwitch, RemoteBusID: "0000:c0:00.0"})
		}
		return out
	}
	cat := func(xs ...[]NVLinkEnd) []NVLinkEnd {
		var out []NVLinkEnd
		for _, x := range xs {
			out = append(out, x...)
		}
		return out
	}
	tests := []struct {
		name  string
		ends  [][]NVLinkEnd
		links [][]int
		mode  string
		warns []string
	}{{
		name: "no NVLink", ends: [][]NVLinkEnd{nil, nil, nil},
		links: [][]int{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, mode: "none",
	}, {
		// min(12, 12) between 0 and 1; GPU 2 has only 6 links into the
		// fabric, so its pairs get min(12, 6) = 6.
		name: "NVSwitch: pairs get the lesser switch link count",
		ends: [][]NVLinkEnd{sw(12), sw(12), sw(6)}, links: [][]int{{0, 12, 6}, {12, 0, 6}, {6, 6, 0}}, mode: "nvswitch",
	}, {
		name: "bridge between 0 and 1, GPU 2 alone",
		ends: [][]NVLinkEnd{gpu(1, 4), gpu(0, 4), nil}, links: [][]int{{0, 4, 0}, {4, 0, 0}, {0, 0, 0}}, mode: "direct",
	}, {
		// A remote type the driver did not give is resolved by bus id when
		// it names a GPU of the node.
		name:  "unknown remote type naming a local GPU counts as a GPU link",
		ends:  [][]NVLinkEnd{{{Remote: RemoteUnknown, RemoteBusID: ids[1]}}, {{Remote: RemoteUnknown, RemoteBusID: ids[0]}}, nil},
		links: [][]int{{0, 1, 0}, {1, 0, 0}, {0, 0, 0}}, mode: "direct",
	}, {
		name: "one side reports fewer links: the larger count wins, with a warning",
		ends: [][]NVLinkEnd{gpu(1, 2), gpu(0, 1), nil}, links: [][]int{{0, 2, 0}, {2, 0, 0}, {0, 0, 0}}, mode: "direct",
		warns: []string{"disagree on their NVLinks (2 vs 1); using 2"},
	}, {
		name:  "switch links plus a direct pair",
		ends:  [][]NVLinkEnd{cat(sw(2), gpu(1, 1)), cat(sw(2), gpu(0, 1)), sw(2)},
		links: [][]int{{0, 3, 2}, {3, 0, 2}, {2, 2, 0}}, mode: "mixed",
	}, {
		name:  "CPU links and foreign GPUs are not GPU pairs",
		ends:  [][]NVLinkEnd{{{Remote: RemoteCPU, RemoteBusID: "0000:00:00.0"}, {Remote: RemoteGPU, RemoteBusID: "0000:99:00.0"}}, nil, nil},
		links: [][]int{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, mode: "none",
		warns: []string{"1 NVLinks end at neither a GPU of this node nor an NVSwitch"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resolveNVLinks(ids, tc.ends)
			if diff := cmp.Diff(tc.links, r.Links); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
			if r.Mode != tc.mode {
				t.Errorf("mode = %q, want %q", r.Mode, tc.mode)
			}
			if len(r.Warnings) != len(tc.warns) {
				t.Fatalf("warnings = %q, want %d matching %q", r.Warnings, len(tc.warns), tc.warns)
			}
			for i, w := range tc.warns {
				if !strings.Contains(r.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, r.Warnings[i], w)
				}
			}
		})
	}
}
