package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmgen"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// genOptions are the flags every generator shares.
type genOptions struct {
	topology, output string
}

func (o *genOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.topology, "topology", "", "cluster file (YAML, version v1)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "-", "file to write (- for stdout)")
}

func newGenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate Slurm configuration from the cluster file: topology.conf, gres.conf, node features",
		Args:  cobra.ArbitraryArgs,
		RunE:  needSubcommand,
	}
	cmd.AddCommand(newGenTopologyCmd(), newGenGresCmd(), newGenFeaturesCmd())
	return cmd
}

func newGenTopologyCmd() *cobra.Command {
	o, t := genOptions{}, slurmgen.TopologyOptions{}
	cmd := &cobra.Command{
		Use:   "topology --topology cluster.yaml [--plugin tree|block] [--format topology.conf|topology.yaml]",
		Short: "Write topology.conf: the switch tree (topology/tree) or NVLink blocks (topology/block, Slurm 23.11+); or topology.yaml with both (Slurm 25.05+)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGen(cmd, o, func(w io.Writer, c *topology.Cluster) ([]string, error) {
				return slurmgen.TopologyConf(w, c, t)
			})
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&t.Plugin, "plugin", slurmgen.PluginTree, "tree (any Slurm; blocks become switches under their leaf) or block (Slurm 23.11+: BlockName= lines only); with topology.yaml, the cluster_default topology")
	cmd.Flags().StringVar(&t.Format, "format", slurmgen.FormatConf, "topology.conf (one plugin) or topology.yaml (Slurm 25.05+: a tree and a block topology, one per partition through Topology=)")
	cmd.Flags().StringVar(&t.Root, "root", "top", "name of the switch joining several top-level switches")
	return cmd
}

func newGenGresCmd() *cobra.Command {
	o, g := genOptions{}, slurmgen.GresOptions{}
	cmd := &cobra.Command{
		Use:   "gres --topology cluster.yaml [--dev-dir /dev] [--threads-per-core N]",
		Short: "Write gres.conf: one line per GPU with Type=, File=, Links= (NVSwitch-aware) and Cores= (from NUMA)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case g.ThreadsPerCore < 0:
				return usagef("--threads-per-core %d: want 1 or more (0: from the cluster file)", g.ThreadsPerCore)
			case g.NUMANodes < 0:
				return usagef("--numa-nodes %d: want 1 or more (0: from the GPUs' and NICs' NUMA ids)", g.NUMANodes)
			}
			return runGen(cmd, o, func(w io.Writer, c *topology.Cluster) ([]string, error) {
				return slurmgen.GresConf(w, c, g)
			})
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&g.DevDir, "dev-dir", "/dev", "directory of the nvidia<N> device files")
	f.IntVar(&g.ThreadsPerCore, "threads-per-core", 0, "hardware threads per core: the cluster file's cpus divided by this are Slurm's cores (0: each node's threads_per_core from the cluster file, 1 when absent)")
	f.IntVar(&g.NUMANodes, "numa-nodes", 0, "NUMA nodes per node (0: one more than the highest NUMA id of its GPUs and NICs)")
	f.BoolVar(&g.NoAutoDetectLine, "no-autodetect-line", false, "leave out AutoDetect=off (when appending to an existing gres.conf)")
	return cmd
}

func newGenFeaturesCmd() *cobra.Command {
	o := genOptions{}
	var format string
	cmd := &cobra.Command{
		Use:   "features --topology cluster.yaml [--format slurm.conf|scontrol]",
		Short: "Print node features (gt_<spine>, gt_<leaf>, gt_<block>, gt_<node>, gt_<model>) for the job_submit plugin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGen(cmd, o, func(w io.Writer, c *topology.Cluster) ([]string, error) {
				return nil, slurmgen.Features(w, c, format)
			})
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&format, "format", slurmgen.FormatSlurmConf, "slurm.conf (NodeName=... Features=... lines) or scontrol (update commands)")
	return cmd
}

// runGen loads the cluster, runs a generator and writes its output to
// stdout or, atomically, to a file; warnings go to stderr.
func runGen(cmd *cobra.Command, o genOptions, gen func(io.Writer, *topology.Cluster) ([]string, error)) error {
	c, err := loadCluster(o.topology)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	warns, err := gen(&buf, c)
	if err != nil {
		return asUsage(err)
	}
	for _, w := range warns {
		fmt.Fprintf(cmd.ErrOrStderr(), "gangtopo: warning: %s\n", w)
	}
	if o.output == "-" {
		_, err = cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	// The user chose the path: no directory policy, but never a torn file.
	return publish.WriteFile(o.output, publish.Options{AllowInsecureDir: true}, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}
