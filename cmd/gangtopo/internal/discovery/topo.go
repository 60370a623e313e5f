package discovery

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTopoMatrix prints the node map as `nvidia-smi topo -m` does: GPUs
// and NICs in rows and columns, NV<n> where GPUs share n NVLinks, else the
// PCIe level, then CPU and NUMA affinity per GPU and a NIC legend. It makes
// a discovered map easy to hold side by side with the driver's own view.
func WriteTopoMatrix(w io.Writer, m *NodeMap) error {
	if m.CPUOnly() {
		_, err := fmt.Fprintf(w, "%s: no GPUs (%s)\n", m.Node, m.NoGPUReason)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	head := []string{""}
	for i := range m.GPUs {
		head = append(head, "GPU"+strconv.Itoa(i))
	}
	for n := range m.NICs {
		head = append(head, "NIC"+strconv.Itoa(n))
	}
	fmt.Fprintln(tw, strings.Join(append(head, "CPU Affinity", "NUMA Affinity"), "\t"))
	for i, g := range m.GPUs {
		row := []string{"GPU" + strconv.Itoa(i)}
		for j := range m.GPUs {
			row = append(row, gpuCell(m, i, j))
		}
		for n := range m.NICs {
			row = append(row, m.NICPCIe[i][n].String())
		}
		fmt.Fprintln(tw, strings.Join(append(row, numaCPUs(m, g.NUMA), numaName(g.NUMA)), "\t"))
	}
	for n := range m.NICs {
		fmt.Fprintln(tw, strings.Join(nicRow(m, n), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(m.NICs) > 0 {
		fmt.Fprintln(w, "\nNIC Legend:")
		for n, nic := range m.NICs {
			fmt.Fprintf(w, "  NIC%d: %s\n", n, nic.Name)
		}
	}
	_, err := fmt.Fprintf(w, "\nnvlink mode: %s; X = self, NV# = # NVLinks, PIX/PXB/PHB/NODE/SYS as in nvidia-smi topo -m\n", m.NVLink.Mode)
	return err
}

// nicRow is NIC n's row: its level to every GPU, then to every NIC.
func nicRow(m *NodeMap, n int) []string {
	nic := m.NICs[n]
	row := []string{"NIC" + strconv.Itoa(n)}
	for i := range m.GPUs {
		row = append(row, m.NICPCIe[i][n].String())
	}
	for o, other := range m.NICs {
		l := LevelSelf
		if o != n {
			l = Level(nic.PCIPath, other.PCIPath, nic.NUMA, other.NUMA)
		}
		row = append(row, l.String())
	}
	return row
}

func gpuCell(m *NodeMap, i, j int) string {
	if i == j {
		return "X"
	}
	if n := m.NVLink.Links[i][j]; n > 0 {
		return "NV" + strconv.Itoa(n)
	}
	return m.PCIe[i][j].String()
}

func numaCPUs(m *NodeMap, numa int) string {
	for _, n := range m.Host.NUMA {
		if n.ID == numa {
			return n.CPUs
		}
	}
	return "N/A"
}

func numaName(numa int) string {
	if numa < 0 {
		return "N/A"
	}
	return strconv.Itoa(numa)
}
