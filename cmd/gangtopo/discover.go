package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// discoverGPULib and discoverClock are the world the discovery commands
// see; tests replace them.
var (
	discoverGPULib = discovery.DefaultGPULib
	discoverClock  = time.Now
)

type discoverOptions struct {
	sysfs, node, output, topology string
	noGPUs                        bool
}

func (o *discoverOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.sysfs, "sysfs", "/sys", "sysfs root to read NICs, PCI paths and CPUs from")
	f.StringVar(&o.node, "node-name", "", "the node's Slurm name (default: the short host name)")
	f.BoolVar(&o.noGPUs, "no-gpus", false, "do not load NVML; report the node as CPU-only")
}

// discoverOpts are the discovery options the flags select.
func (o *discoverOptions) discoverOpts() []discovery.Option {
	lib := discoverGPULib()
	if o.noGPUs {
		lib = discovery.Null{Reason: "--no-gpus given"}
	}
	return []discovery.Option{
		discovery.WithGPULib(lib), discovery.WithSysfs(o.sysfs), discovery.WithNodeName(o.node),
		discovery.WithClock(discoverClock), discovery.WithVersion(version),
	}
}

func newDiscoverCmd() *cobra.Command {
	o := discoverOptions{}
	cmd := &cobra.Command{
		Use:   "discover [--sysfs /sys] [-o json|topo|nodefile]",
		Short: "Discover this node's GPUs, NVLink/PCIe topology and RDMA NICs, and print the node map",
		Long: `Discover runs the node daemon's discovery once and prints the result:
  json  the node map (docs/node-map.md), as the daemon publishes it
  topo  a GPU/NIC matrix in the layout of ` + "`nvidia-smi topo -m`" + `, to compare with the driver's view
  nodefile  the node file the SPANK plugin reads for NCCL_IB_HCA and GANGTOPO_*
            (with --topology, including the node's block, leaf and spine)
A host without NVML or GPUs is reported as CPU-only, not as an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDiscover(cmd.OutOrStdout(), o)
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "json", outputHelp("json", "topo", "nodefile"))
	cmd.Flags().StringVar(&o.topology, "topology", "", "cluster file for the node file's domain lines (-o nodefile)")
	return cmd
}

func runDiscover(w io.Writer, o discoverOptions) error {
	if err := checkOutput(o.output, "json", "topo", "nodefile"); err != nil {
		return err
	}
	m, err := discovery.Discover(o.discoverOpts()...)
	if err != nil {
		return fmt.Errorf("discover: %w", err)
	}
	switch o.output {
	case "topo":
		return discovery.WriteTopoMatrix(w, m)
	case "nodefile":
		var domains []nodefile.Domain
		if o.topology != "" {
			if domains, err = clusterDomains(o.topology, m.Node); err != nil {
				return asUsage(err)
			}
		}
		_, err = w.Write(discovery.BuildNodeFile(m, domains).RenderWithComment(discovery.NodeFileComment))
		return err
	}
	return m.Encode(w)
}
