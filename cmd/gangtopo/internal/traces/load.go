package traces

import (
	"path/filepath"

	"github.com/gangtopo/gangtopo/selector/sim/fgd"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// OpenbWorkloads are the 17 pod lists of the FGD paper's experiments, in
// its order (experiments/run_scripts/generate_run_scripts.py).
var OpenbWorkloads = []string{
	"default",
	"cpu050", "cpu100", "cpu200", "cpu250",
	"gpushare100", "gpushare40", "gpushare60", "gpushare80",
	"gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
	"multigpu20", "multigpu30", "multigpu40", "multigpu50",
}

// OpenbCluster reads the openb GPU node list from the trace directory and
// builds the simulator's cluster: 1,213 nodes under one leaf.
func OpenbCluster(dir string) (*topology.Cluster, []string, error) {
	nodes, err := ReadNodes(filepath.Join(dir, OpenbNodes))
	if err != nil {
		return nil, nil, err
	}
	sn := make([]fgd.Node, len(nodes))
	for i, n := range nodes {
		sn[i] = n.Node
	}
	c, err := fgd.BuildCluster("openb", sn)
	if err != nil {
		return nil, nil, err
	}
	return c, Models(nodes), nil
}

// OpenbWorkload reads one openb pod list ("default", "gpushare40", ...) and
// prepares it for cluster c, whose node list has the given models.
func OpenbWorkload(dir, name string, c *topology.Cluster, models []string) (*fgd.Workload, error) {
	pods, err := ReadPods(filepath.Join(dir, OpenbPods(name)), models)
	if err != nil {
		return nil, err
	}
	sp := make([]fgd.Pod, len(pods))
	for i, p := range pods {
		sp[i] = p.Pod
	}
	return fgd.Prepare(name, c, sp)
}
