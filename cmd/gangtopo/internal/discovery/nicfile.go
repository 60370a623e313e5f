package discovery

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// NICFileHeader is the first line of every NIC file; its last word is the
// format version.
const NICFileHeader = "# gangtopo nic map v1"

// NICFile renders the per-node NIC file the SPANK plugin reads in the
// remote context to set NCCL_IB_HCA for a job's GPUs (docs/node-map.md):
//
//	# gangtopo nic map v1
//	# node dgx001, 2025-01-02T03:04:05Z: <gpu index> <hca:port>[,<hca:port>...]
//	0 mlx5_0:1
//	1 mlx5_1:1
//
// One line per GPU, keyed by its NVML index (the index in nvidia-smi and in
// Slurm's gres.conf order), listing the nearest usable HCAs with their
// active ports, in the form NCCL_IB_HCA takes. Usable means a physical
// function with an active port; nearest is by PCI distance among those, so
// a GPU whose own NIC is down falls back to the next nearest. A GPU with no
// usable NIC at all has no line. Lines starting with # are comments.
func NICFile(m *NodeMap) []byte {
	var b bytes.Buffer
	fmt.Fprintln(&b, NICFileHeader)
	fmt.Fprintf(&b, "# node %s, %s: <gpu index> <hca:port>[,<hca:port>...]\n", m.Node, m.Time.Format("2006-01-02T15:04:05Z07:00"))
	for i, g := range m.GPUs {
		var hcas []string
		for _, n := range nearest(m.NICPCIe[i], m.NICs, (*NIC).Usable) {
			for _, p := range m.NICs[n].Ports {
				if p.Active() {
					hcas = append(hcas, fmt.Sprintf("%s:%d", m.NICs[n].Name, p.Port))
				}
			}
		}
		if len(hcas) > 0 {
			fmt.Fprintf(&b, "%d %s\n", g.Index, strings.Join(hcas, ","))
		}
	}
	return b.Bytes()
}

// ParseNICFile reads a NIC file into GPU index -> HCAs. It is the reference
// reader for the format (the SPANK plugin has its own, in C).
func ParseNICFile(r io.Reader, name string) (map[int][]string, error) {
	sc := bufio.NewScanner(r)
	out := map[int][]string{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 && text != NICFileHeader {
			return nil, fmt.Errorf("%s:1: want %q, got %q", name, NICFileHeader, text)
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		idx, err := strconv.Atoi(f[0])
		if len(f) != 2 || err != nil || idx < 0 {
			return nil, fmt.Errorf("%s:%d: want `<gpu index> <hca:port>[,...]`, got %q", name, line, text)
		}
		if _, dup := out[idx]; dup {
			return nil, fmt.Errorf("%s:%d: GPU %d listed twice", name, line, idx)
		}
		out[idx] = strings.Split(f[1], ",")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty (want %q first)", name, NICFileHeader)
	}
	return out, nil
}
