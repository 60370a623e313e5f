package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

type placeOptions struct {
	topology, state, output       string
	gpus, gangTopology, models    string
	partitions, nodelist, exclude string
	nodes, perNode, share         int
	cpusPerGPU                    int
	memPerGPU                     int64
	explain, mixModels            bool
}

// errNotPlaced makes `gangtopo place` exit 1 when the request does not fit
// (the result itself has been printed).
var errNotPlaced = errors.New("not placed")

func newPlaceCmd() *cobra.Command {
	o := placeOptions{}
	cmd := &cobra.Command{
		Use:   "place --topology cluster.yaml [--state snapshot.json] --gpus N [--gang-topology TIER[:MODE][,slice=S]] [--explain]",
		Short: "Dry-run a placement: which nodes and GPUs a request would get, and why",
		Long: `Dry-run a placement: which nodes and GPUs a request would get, and why.

Exit status: 0 placed, 1 not placed (no room now, or never on this cluster;
the reason is printed), 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlace(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "topology", "", "cluster file (YAML, version v1)")
	f.StringVar(&o.state, "state", "", "occupancy snapshot (JSON, version v1); empty cluster if omitted")
	f.StringVar(&o.gpus, "gpus", "", "GPUs for the whole job: N or MODEL:N (Slurm's typed --gpus, e.g. h100:16)")
	f.IntVarP(&o.nodes, "nodes", "N", 0, "exact number of nodes (Slurm -N)")
	f.IntVar(&o.perNode, "gpus-per-node", 0, "GPUs on each node (with --nodes)")
	f.StringVar(&o.models, "gpu-model", "", "acceptable GPU models, comma-separated")
	f.BoolVar(&o.mixModels, "mix-models", false, "allow one gang to span GPU models")
	f.IntVar(&o.share, "share", 0, "per-GPU share in milli-GPUs (1..1000; fractional shares need --gpus 1)")
	f.IntVar(&o.cpusPerGPU, "cpus-per-gpu", 0, "CPUs per GPU (Slurm's --cpus-per-gpu)")
	f.Int64Var(&o.memPerGPU, "mem-per-gpu", 0, "memory per GPU in MiB (Slurm's --mem-per-gpu)")
	f.StringVar(&o.gangTopology, "gang-topology", defaultGangTopology, gangTopologyHelp)
	f.StringVar(&o.partitions, "partition", "", "partitions, comma-separated")
	f.StringVarP(&o.nodelist, "nodelist", "w", "", "only these nodes (host list)")
	f.StringVarP(&o.exclude, "exclude", "x", "", "never these nodes (host list)")
	f.BoolVar(&o.explain, "explain", false, "print rejected candidates by reason and the scores of the best candidates")
	f.StringVarP(&o.output, "output", "o", "table", outputHelp("table", "json"))
	return cmd
}

// request turns the flags into an engine request.
func (o *placeOptions) request() (request.Request, error) {
	r := request.Request{Nodes: o.nodes, GPUsPerNode: o.perNode, Milli: o.share, MixModels: o.mixModels, MemMiB: 0}
	if o.gpus == "" && o.nodes > 0 && o.perNode > 0 {
		o.gpus = strconv.Itoa(o.nodes * o.perNode)
	}
	model, count, typed := strings.Cut(o.gpus, ":")
	if !typed {
		count, model = model, ""
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return r, usagef("--gpus %q: want a GPU count N >= 1 or MODEL:N", o.gpus)
	}
	r.GPUs = n
	if model != "" {
		r.Models = []string{model}
	}
	r.Models = append(r.Models, request.SplitList(o.models)...)
	opt, err := request.ParseOption(o.gangTopology)
	if err != nil {
		return r, usagef("--gang-topology: %v", err)
	}
	opt.Apply(&r)
	switch {
	case o.cpusPerGPU < 0:
		return r, usagef("--cpus-per-gpu %d: want 0 or more", o.cpusPerGPU)
	case o.memPerGPU < 0:
		return r, usagef("--mem-per-gpu %d: want 0 or more MiB", o.memPerGPU)
	case o.memPerGPU > math.MaxInt64/int64(n):
		return r, usagef("--mem-per-gpu %d: %d GPUs of it overflow (want at most %d MiB per GPU)", o.memPerGPU, n, math.MaxInt64/int64(n))
	case int64(o.cpusPerGPU) > math.MaxInt64/1000/int64(n):
		return r, usagef("--cpus-per-gpu %d: %d GPUs of it overflow", o.cpusPerGPU, n)
	}
	r.CPUMilli = int64(o.cpusPerGPU) * 1000 * int64(n)
	r.MemMiB = o.memPerGPU * int64(n)
	r.Partitions = request.SplitList(o.partitions)
	if r.Allowed, err = expandFlag("--nodelist", o.nodelist); err != nil {
		return r, err
	}
	if r.Excluded, err = expandFlag("--exclude", o.exclude); err != nil {
		return r, err
	}
	return r, nil
}

func expandFlag(flag, expr string) ([]string, error) {
	if expr == "" {
		return nil, nil
	}
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return names, nil
}

// defaultGangTopology is what place and defrag read without
// --gang-topology: what the plugin gives a job without the option
// (default_topology's default), so that the dry runs answer for the jobs
// users submit.
var defaultGangTopology = ctld.Defaults().DefaultTopology

const gangTopologyHelp = "TIER[:MODE][,slice=S]; TIER: nvlink, node, block, leaf, spine, any; MODE: required or preferred; by default what the plugin gives a job without the option"

func runPlace(w io.Writer, o placeOptions) error {
	if err := checkOutput(o.output, "table", "json"); err != nil {
		return err
	}
	c, s, err := loadState(o.topology, o.state)
	if err != nil {
		return err
	}
	r, err := o.request()
	if err != nil {
		return err
	}
	res := place.New(c, place.Options{}).Place(s, r)
	if res.Status == place.Invalid {
		return usagef("%s", res.Message)
	}
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(resultJSON(c, &r, &res)); err != nil {
			return err
		}
	} else {
		writePlacement(w, c, &r, &res, o.explain)
	}
	if res.Status != place.Placed {
		return errNotPlaced
	}
	return nil
}

func writePlacement(w io.Writer, c *topology.Cluster, r *request.Request, res *place.Result, explain bool) {
	fmt.Fprintf(w, "request: %s\n", r.String())
	if res.Status == place.Placed {
		fmt.Fprintln(w, res.Message)
	} else {
		fmt.Fprintf(w, "%s: %s\n", res.Status, res.Message)
	}
	for _, na := range res.Alloc.Nodes {
		fmt.Fprintf(w, "  %-12s GPUs %-10s", c.Nodes[na.Node].Name, place.IndexList(na.GPUs))
		if na.Milli < 1000 {
			fmt.Fprintf(w, " share %d milli", na.Milli)
		}
		fmt.Fprintf(w, " CPUs %g\n", float64(na.CPUMilli)/1000)
	}
	if !explain {
		return
	}
	fmt.Fprintln(w, "\nrejected candidates:")
	if len(res.Rejected) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, rc := range res.RejectedSorted() {
		fmt.Fprintf(w, "  %5d  %s\n", rc.Count, rc.Reason)
	}
	if len(res.Candidates) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncandidates, best first (compared left to right; frag in GPUs):")
	fmt.Fprintf(w, "  %-16s %-7s %5s %5s %10s %9s %9s %5s %10s %5s\n", "domain", "tier", "nodes", "spans", "frag-delta", "node-frag", "gang-frag", "links", "domain-idle", "free-after")
	for _, cd := range res.Candidates {
		sc := cd.Score
		fmt.Fprintf(w, "  %-16s %-7s %5d %5d %10.3f %9.3f %9.3f %5d %10.1f %5d\n", c.Domains[cd.Domain].Name, cd.Tier,
			sc.Nodes, sc.Spans, sc.FragDelta/1000, sc.NodeFrag/1000, sc.GangFrag/1000, sc.Links, float64(sc.DomainIdle)/1000, sc.FreeAfter)
	}
}

// placementJSON is the -o json form of a result, with names instead of IDs.
type placementJSON struct {
	Request      string         `json:"request"`
	Status       string         `json:"status"`
	Message      string         `json:"message"`
	Domain       string         `json:"domain,omitempty"`
	Tier         string         `json:"tier,omitempty"`
	Model        string         `json:"model,omitempty"`
	Widened      bool           `json:"widened,omitempty"`
	Nodes        []nodeJSON     `json:"nodes,omitempty"`
	Alternatives []string       `json:"alternatives,omitempty"`
	Rejected     map[string]int `json:"rejected,omitempty"`
}

type nodeJSON struct {
	Name  string  `json:"name"`
	GPUs  []int   `json:"gpus"`
	Milli int     `json:"milli"`
	CPUs  float64 `json:"cpus"`
}

func resultJSON(c *topology.Cluster, r *request.Request, res *place.Result) placementJSON {
	out := placementJSON{Request: r.String(), Status: res.Status.String(), Message: res.Message, Model: res.Model, Widened: res.Widened}
	if res.Status == place.Placed {
		out.Domain, out.Tier = c.Domains[res.Domain].Name, res.Tier.String()
	}
	for _, na := range res.Alloc.Nodes {
		out.Nodes = append(out.Nodes, nodeJSON{c.Nodes[na.Node].Name, na.GPUs, int(na.Milli), float64(na.CPUMilli) / 1000})
	}
	for _, d := range res.Alternatives {
		out.Alternatives = append(out.Alternatives, c.Domains[d].Name)
	}
	if len(res.Rejected) > 0 {
		out.Rejected = map[string]int{}
		for k, v := range res.Rejected {
			out.Rejected[string(k)] = v
		}
	}
	return out
}
