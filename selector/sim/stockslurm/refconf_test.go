package stockslurm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// This file turns a reference run's slurm.conf, gres.conf and
// topology.conf into a topology.Cluster, so the test runs on exactly the
// hardware the real slurmctld saw. It reads only the keys those files use.

// confLine is one "Key=Value Key=Value" line of a Slurm config file.
type confLine struct {
	at   string
	keys map[string]string
}

func readConf(path string) ([]confLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []confLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cl := confLine{at: fmt.Sprintf("%s:%d", filepath.Base(path), n), keys: map[string]string{}}
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%s: %q is not Key=Value", cl.at, kv)
			}
			cl.keys[k] = v
		}
		out = append(out, cl)
	}
	return out, sc.Err()
}

// refCluster builds the cluster of conf/<name>/.
func refCluster(dir, name string) (*topology.Cluster, error) {
	base := filepath.Join(dir, "conf", name)
	nodes, err := slurmConfNodes(filepath.Join(base, "slurm.conf"))
	if err != nil {
		return nil, err
	}
	if err := applyGresConf(filepath.Join(base, "gres.conf"), nodes); err != nil {
		return nil, err
	}
	spec := topology.Spec{Name: "ref-" + name}
	byName := map[string]int{}
	for i := range nodes {
		spec.Nodes = append(spec.Nodes, *nodes[i])
		byName[nodes[i].Name] = i
	}
	if err := applyTopologyConf(filepath.Join(base, "topology.conf"), &spec); err != nil {
		return nil, err
	}
	return topology.Build(spec)
}

// slurmConfNodes reads the NodeName lines (DEFAULT first) in order.
func slurmConfNodes(path string) ([]*topology.NodeSpec, error) {
	lines, err := readConf(path)
	if err != nil {
		return nil, err
	}
	def := map[string]string{}
	var out []*topology.NodeSpec
	for _, l := range lines {
		name, ok := l.keys["NodeName"]
		if !ok {
			continue
		}
		if name == "DEFAULT" {
			def = l.keys
			continue
		}
		names, err := hostlist.Expand(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.at, err)
		}
		get := func(k string) string {
			if v, ok := l.keys[k]; ok {
				return v
			}
			return def[k]
		}
		cpus, err := strconv.Atoi(get("CPUs"))
		if err != nil {
			return nil, fmt.Errorf("%s: CPUs: %w", l.at, err)
		}
		weight := 1
		if w := get("Weight"); w != "" {
			if weight, err = strconv.Atoi(w); err != nil {
				return nil, fmt.Errorf("%s: Weight: %w", l.at, err)
			}
		}
		for _, n := range names {
			out = append(out, &topology.NodeSpec{Name: n, CPUs: cpus, MemoryMiB: 1000000, Weight: weight,
				Partitions: []string{"gpu"}})
		}
	}
	return out, nil
}

// applyGresConf adds one GPU per File= device; Cores= becomes the GPU's
// NUMA node (socket = first core / 32 on these 2x32-core nodes) and
// Links= the NVLink matrix.
func applyGresConf(path string, nodes []*topology.NodeSpec) error {
	lines, err := readConf(path)
	if err != nil {
		return err
	}
	for _, l := range lines {
		nl, ok := l.keys["NodeName"]
		if !ok || l.keys["Name"] != "gpu" {
			continue
		}
		names, err := hostlist.Expand(nl)
		if err != nil {
			return fmt.Errorf("%s: %w", l.at, err)
		}
		files, err := hostlist.Expand(l.keys["File"])
		if err != nil {
			return fmt.Errorf("%s: File: %w", l.at, err)
		}
		numa := -1
		if c := l.keys["Cores"]; c != "" {
			first, err := strconv.Atoi(strings.Split(strings.Split(c, ",")[0], "-")[0])
			if err != nil {
				return fmt.Errorf("%s: Cores: %w", l.at, err)
			}
			numa = first / 32
		}
		var links []int
		if v := l.keys["Links"]; v != "" {
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("%s: Links: %w", l.at, err)
				}
				links = append(links, max(n, 0))
			}
		}
		for _, nd := range nodes {
			if !contains(names, nd.Name) {
				continue
			}
			for range files {
				nd.GPUs = append(nd.GPUs, topology.GPUSpec{Model: "gpu", NUMA: numa, PCIeSwitch: -1})
				if links != nil {
					nd.Links = append(nd.Links, links)
				}
			}
		}
	}
	return nil
}

// applyTopologyConf turns SwitchName lines into leaves and spines; a
// switch over spines is the top switch, which the cluster root stands for.
func applyTopologyConf(path string, spec *topology.Spec) error {
	lines, err := readConf(path)
	if err != nil {
		return err
	}
	leaves := map[string]topology.LeafSpec{}
	var order []string
	for _, l := range lines {
		name := l.keys["SwitchName"]
		if nl, ok := l.keys["Nodes"]; ok {
			names, err := hostlist.Expand(nl)
			if err != nil {
				return fmt.Errorf("%s: %w", l.at, err)
			}
			leaves[name] = topology.LeafSpec{Name: name, At: l.at, Nodes: names}
			order = append(order, name)
			continue
		}
		kids, err := hostlist.Expand(l.keys["Switches"])
		if err != nil {
			return fmt.Errorf("%s: %w", l.at, err)
		}
		if _, isLeafParent := leaves[kids[0]]; !isLeafParent {
			continue // the top switch
		}
		sp := topology.SpineSpec{Name: name, At: l.at}
		for _, k := range kids {
			sp.Leaves = append(sp.Leaves, leaves[k])
			delete(leaves, k)
		}
		spec.Spines = append(spec.Spines, sp)
	}
	for _, name := range order {
		if lf, ok := leaves[name]; ok {
			spec.Leaves = append(spec.Leaves, lf)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
