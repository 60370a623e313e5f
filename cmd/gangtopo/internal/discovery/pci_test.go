package discovery

import (
	"github.com/gangtopo/gangtopo/selector/hostlist"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func path(s string) PCIPath {
	if s == "" {
		return nil
	}
	return PCIPath(strings.Split(s, "/"))
}

func TestLevel(t *testing.T) {
	const sw = "pci0000:10/0000:10:01.0/0000:11:00.0"
	tests := []struct {
		name         string
		a, b         string
		numaA, numaB int
		want         PCILevel
	}{
		{"two downstream ports of one switch", sw + "/0000:12:00.0/0000:13:00.0", sw + "/0000:12:01.0/0000:14:00.0", 0, 0, LevelPIX},
		// b sits behind a second switch under the first: 4 bridges below the common one.
		{"nested switches", sw + "/0000:12:00.0/0000:13:00.0", sw + "/0000:12:01.0/0000:15:00.0/0000:16:00.0/0000:17:00.0", 0, 0, LevelPXB},
		{"same root bus, different root ports", "pci0000:10/0000:10:01.0/0000:13:00.0", "pci0000:10/0000:10:02.0/0000:14:00.0", 0, 0, LevelPHB},
		{"two functions on one root port", "pci0000:10/0000:10:01.0/0000:13:00.0", "pci0000:10/0000:10:01.0/0000:13:00.1", 0, 0, LevelPHB},
		{"different root complexes, same NUMA node", sw + "/0000:12:00.0/0000:13:00.0", "pci0000:20/0000:20:01.0/0000:21:00.0", 0, 0, LevelNode},
		{"different root complexes and sockets", sw + "/0000:12:00.0/0000:13:00.0", "pci0000:a0/0000:a0:01.0/0000:a1:00.0", 0, 1, LevelSys},
		{"no path: NUMA decides", "", "pci0000:20/0000:20:01.0/0000:21:00.0", 1, 1, LevelNode},
		{"no path, unknown NUMA", "", "", -1, -1, LevelSys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Level(path(tc.a), path(tc.b), tc.numaA, tc.numaB); got != tc.want {
				t.Errorf("Level = %v, want %v", got, tc.want)
			}
			if got := Level(path(tc.b), path(tc.a), tc.numaB, tc.numaA); got != tc.want {
				t.Errorf("Level is not symmetric: reversed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"0000:1A:00.0":     "0000:1a:00.0",
		"00010000:05:00.1": "10000:05:00.1",
		"not a bus id":     "not a bus id",
	} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShortModel(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":   "h100",
		"NVIDIA H200":             "h200",
		"NVIDIA A100-SXM4-80GB":   "a100",
		"Tesla V100-SXM2-32GB":    "v100",
		"NVIDIA L40S":             "l40s",
		"NVIDIA RTX A6000":        "a6000",
		"NVIDIA GeForce RTX 4090": "4090",
		"Tesla T4":                "t4",
		"NVIDIA":                  "nvidia",
		"":                        "unknown",
	} {
		if got := ShortModel(in); got != want {
			t.Errorf("ShortModel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0-2,8,10-11")
	if diff := cmp.Diff([]int{0, 1, 2, 8, 10, 11}, got); err != nil || diff != "" {
		t.Errorf("ParseCPUList: err %v, (-want +got):\n%s", err, diff)
	}
	for _, bad := range []string{"a", "3-1", "1-", ",1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q): want an error", bad)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	in := []string{"mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx4_0", "mlx5_1"}
	want := []string{"mlx4_0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0"}
	got := append([]string(nil), in...)
	for i := range got { // insertion sort with naturalLess
		for j := i; j > 0 && hostlist.Less(got[j], got[j-1]); j-- {
			got[j], got[j-1] = got[j-1], got[j]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
