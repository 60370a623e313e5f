package fgd

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Policy places jobs. Place returns the allocation for j on snapshot s, or
// false when j does not fit (a result, not an error). It must not modify s:
// the simulator applies the allocation. It may decline a job only for
// want of room, which in this protocol (nothing ever leaves) is final: Run
// does not ask again for a job type that did not fit once. A Policy serves
// one run and need not be safe for concurrent use.
type Policy interface {
	Name() string
	Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool)
}

// Env is what a policy gets to know about its run.
type Env struct {
	Workload *Workload
	Cluster  *topology.Cluster
	// Ranks orders the nodes for ties, lower first: FGD's random node name
	// prefixes, drawn from the run's seed.
	Ranks []int32
	// Rand is the run's random stream, after the protocol's own draws.
	Rand *rand.Rand
}

// Factory makes a policy for one run.
type Factory func(env *Env) (Policy, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
	// order keeps the policies in registration order for listings.
	order []string
)

// Register makes a policy available by name (case-insensitive). Packages
// that bring an engine register it from an init function.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	key := strings.ToLower(name)
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("sim: policy %q registered twice", name))
	}
	registry[key] = f
	order = append(order, name)
}

// Lookup returns the factory of a registered policy.
func Lookup(name string) (Factory, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if f, ok := registry[strings.ToLower(name)]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown policy %q (want one of %s)", name, strings.Join(order, ", "))
}

// Names lists the registered policies: the paper's six in the paper's
// order, stock Slurm, gangtopo, then any others sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := append([]string(nil), order...)
	paper := map[string]int{}
	for i, n := range append(append([]string(nil), PaperPolicies...), "slurm", "gangtopo", "gangtopo-slurm") {
		paper[n] = i
	}
	sort.SliceStable(out, func(a, b int) bool {
		pa, oka := paper[out[a]]
		pb, okb := paper[out[b]]
		switch {
		case oka && okb:
			return pa < pb
		case oka != okb:
			return oka
		}
		return out[a] < out[b]
	})
	return out
}

// PaperPolicies are the FGD paper's policies, in its order.
var PaperPolicies = []string{"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"}

func init() {
	Register("Random", newRandom)
	Register("DotProd", kubeFactory("DotProd", func(*Env) scorer { return dotProd{} }))
	Register("GpuClustering", kubeFactory("GpuClustering", newClustering))
	Register("GpuPacking", kubeFactory("GpuPacking", func(*Env) scorer { return packing{} }))
	Register("BestFit", kubeFactory("BestFit", func(*Env) scorer { return bestFit{} }))
	Register("FGD", kubeFactory("FGD", newFGD))
	Register("slurm", newSlurm)
	Register("gangtopo", newGangtopo)
	Register("gangtopo-slurm", newDeployed)
}
