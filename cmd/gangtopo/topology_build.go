package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/topobuild"
)

type topologyBuildOptions struct {
	nodeMaps, topologyConf, ibnet, output, name string
	partitions, models                          []string
	requireAll                                  bool
}

func newTopologyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Build the cluster file from discovered node maps and the switch topology; print a cluster file's hash",
		Args:  cobra.ArbitraryArgs,
		RunE:  needSubcommand,
	}
	cmd.AddCommand(newTopologyBuildCmd(), newTopologyHashCmd())
	return cmd
}

// newTopologyHashCmd prints what a snapshot records of the cluster file it
// was made against: the controller's and the plugin's copies must agree.
func newTopologyHashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash FILE...",
		Short: "Print each cluster file's name and hash (the controller's and the plugin's copies must print the same)",
		Long: `Hash prints, for each cluster file, the cluster's name and the hash of its
content, as an occupancy snapshot records it. The job_submit plugin refuses a
snapshot made against another hash, so the cluster file the controller daemon
reads (--topology) and the one gangtopo.yaml names (topology:) must print the
same line; compare them on both hosts after every copy.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range args {
				c, err := loadCluster(p)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", c.Hash, c.Name, p)
			}
			return nil
		},
	}
}

func newTopologyBuildCmd() *cobra.Command {
	o := topologyBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build --node-maps DIR (--topology-conf FILE | --ibnetdiscover FILE) -o cluster.yaml",
		Short: "Merge node maps (gangtopo daemon --role node) with topology.conf or ibnetdiscover output into a v1 cluster file",
		Long: `Build reads every *.json node map in --node-maps, takes leaves and spines from a
Slurm topology.conf (SwitchName= lines) or an ibnetdiscover dump, takes NVLink
blocks from the GPUs' fabric cliques, and writes a v1 cluster file (atomically)
with identical hardware folded into shared profiles. Nodes of the switch
topology without a node map are left out with a warning (--require-all makes
that an error); a node map for a node in no leaf is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTopologyBuild(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.nodeMaps, "node-maps", "", "directory of node maps (<node>.json)")
	f.StringVar(&o.topologyConf, "topology-conf", "", "Slurm topology.conf (topology/tree) giving leaves and spines")
	f.StringVar(&o.ibnet, "ibnetdiscover", "", "ibnetdiscover output giving leaves and spines")
	f.StringVarP(&o.output, "output", "o", "-", "cluster file to write (- for stdout)")
	f.StringVar(&o.name, "name", "cluster", "cluster name")
	f.StringSliceVar(&o.partitions, "partition", nil, "partition every node is in (repeatable)")
	f.StringArrayVar(&o.models, "model", nil, `override a GPU model: "NVML name=model", e.g. "NVIDIA A100-SXM4-80GB=a100-80g" (repeatable)`)
	f.BoolVar(&o.requireAll, "require-all", false, "fail when a node of the switch topology has no node map")
	return cmd
}

func runTopologyBuild(stdout, stderr io.Writer, o topologyBuildOptions) error {
	if o.nodeMaps == "" {
		return usagef("--node-maps is required (a directory of node maps from gangtopo daemon --role node)")
	}
	if (o.topologyConf == "") == (o.ibnet == "") {
		return usagef("give exactly one of --topology-conf and --ibnetdiscover")
	}
	models, err := parseModels(o.models)
	if err != nil {
		return err
	}
	maps, err := loadNodeMaps(o.nodeMaps)
	if err != nil {
		return err
	}
	tree, source, err := loadSwitchTree(o.topologyConf, o.ibnet)
	if err != nil {
		return err
	}
	res, err := topobuild.Merge(maps, tree, topobuild.MergeOptions{Name: o.name, Models: models, Partitions: o.partitions, RequireAll: o.requireAll})
	if err != nil {
		return asUsage(err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "gangtopo: warning: %s\n", w)
	}
	if len(o.partitions) == 0 {
		fmt.Fprintln(stderr, "gangtopo: warning: no --partition: the cluster file lists no partitions, so the job_submit plugin places a job of any partition over all of its nodes; give --partition NAME (repeatable) for the partitions these nodes are in, or edit partitions: per node group where partitions cover different nodes")
	}
	header := fmt.Sprintf("Cluster %s: built by gangtopo %s from %d node maps in %s and %s.", o.name, version, len(maps), o.nodeMaps, source)
	var buf bytes.Buffer
	if err := topobuild.WriteClusterYAML(&buf, res.Spec, header, res.Comments); err != nil {
		return asUsage(err)
	}
	if o.output == "-" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	// The user chose the path: no directory policy, but never a torn file.
	return publish.WriteFile(o.output, publish.Options{AllowInsecureDir: true}, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

func parseModels(specs []string) (topobuild.ModelMap, error) {
	m := topobuild.ModelMap{}
	for _, s := range specs {
		name, model, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(model) == "" {
			return nil, usagef("--model %q: want \"NVML name=model\"", s)
		}
		m[strings.TrimSpace(name)] = strings.TrimSpace(model)
	}
	return m, nil
}

// loadNodeMaps reads every *.json in dir, in name order.
func loadNodeMaps(dir string) ([]*discovery.NodeMap, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, asUsage(err)
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, usagef("--node-maps: %v", err)
		}
		return nil, usagef("--node-maps %s: no *.json node maps there", dir)
	}
	sort.Strings(paths)
	var out []*discovery.NodeMap
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, asUsage(err)
		}
		m, err := discovery.DecodeNodeMap(f, p)
		f.Close()
		if err != nil {
			return nil, asUsage(err)
		}
		out = append(out, m)
	}
	return out, nil
}

func loadSwitchTree(conf, ibnet string) (*topobuild.SwitchTree, string, error) {
	path, parse := conf, topobuild.ParseTopologyConf
	if ibnet != "" {
		path, parse = ibnet, topobuild.ParseIBNetDiscover
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", asUsage(err)
	}
	defer f.Close()
	t, err := parse(f, path)
	return t, path, asUsage(err)
}
