package fgd

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// DefaultTune is the FGD paper's workload tuning ratio: pods arrive until
// their GPU request reaches 130% of the cluster's capacity.
const DefaultTune = 1.3

// Result is the outcome of one run.
type Result struct {
	Workload string
	Policy   string
	Seed     int64
	Curve    Curve
	Pods     int // arrived
	Placed   int
	// FailedMilli is the GPU milli of the pods that did not fit.
	FailedMilli int64
	// Final state, after the last pod.
	UsedMilli, CapacityMilli int64
	FragMilli                float64
	// Idle is where the idle capacity is at the end, in milli-GPUs:
	// Idle[k] sums the GPUs with k*50..k*50+49 milli free (k < 20), and
	// Idle[20] the entirely free GPUs.
	Idle [21]int64
	// Contents groups the GPUs by the shares placed on them.
	Contents Contents
}

// Run replays workload w under the policy made by newPolicy with one seed
// and tuning ratio (DefaultTune for the paper's protocol).
func Run(w *Workload, newPolicy Factory, seed int64, tune float64) (*Result, error) {
	order, ranks, rng := arrivals(w, seed, tune)
	p, err := newPolicy(&Env{Workload: w, Cluster: w.Cluster, Ranks: ranks, Rand: rng})
	if err != nil {
		return nil, err
	}
	r := &Result{Workload: w.Name, Policy: p.Name(), Seed: seed, CapacityMilli: w.capacity, Pods: len(order)}
	s := occupancy.New(w.Cluster)
	meter := frag.NewMeter(w.Cluster, &w.Typical)
	nodeFrag := make([]float64, len(w.Cluster.Nodes))
	for n := range nodeFrag {
		nodeFrag[n] = meter.Node(s, topology.NodeID(n))
		r.FragMilli += nodeFrag[n]
	}
	rec := newRecorder(len(w.Cluster.GPUs))
	loads := newGPULoads(w.Cluster)
	var arrived int64
	// Pods never leave, so free capacity only shrinks: a pod type that
	// found no room once never will. Later pods of that type fail without
	// asking the policy (every policy here fails only for want of room).
	hopeless := make([]bool, w.Types)
	for _, i := range order {
		j := &w.Jobs[i]
		arrived += j.TotalMilli()
		var a occupancy.Allocation
		ok := false
		if !hopeless[j.Type] {
			a, ok = p.Place(s, j)
			hopeless[j.Type] = !ok
		}
		if ok {
			if err := s.Allocate(a); err != nil {
				return nil, fmt.Errorf("policy %s placed pod %s where it does not fit: %w", p.Name(), j.Pod.Name, err)
			}
			if err := checkShape(a, j); err != nil {
				return nil, fmt.Errorf("policy %s, pod %s: %w", p.Name(), j.Pod.Name, err)
			}
			loads.add(a)
			r.Placed++
			r.UsedMilli += j.TotalMilli()
			for _, na := range a.Nodes {
				f := meter.Node(s, na.Node)
				r.FragMilli += f - nodeFrag[na.Node]
				nodeFrag[na.Node] = f
			}
		} else {
			r.FailedMilli += j.TotalMilli()
		}
		rec.add(arrived, r.UsedMilli, r.FragMilli, float64(w.capacity-r.UsedMilli))
	}
	r.Curve = rec.curve()
	for _, f := range s.FreeMilli {
		r.Idle[min(int(f)/50, 20)] += int64(f)
	}
	r.Contents = loads.contents(s)
	return r, nil
}

// checkShape verifies that an allocation gives the job what it asked for.
func checkShape(a occupancy.Allocation, j *Job) error {
	gpus := 0
	var cpu int64
	for _, na := range a.Nodes {
		gpus += len(na.GPUs)
		cpu += int64(na.CPUMilli)
		if len(na.GPUs) > 0 && int(na.Milli) != j.Milli {
			return fmt.Errorf("allocated %d milli-GPUs per GPU, the pod asked for %d", na.Milli, j.Milli)
		}
	}
	if gpus != j.GPUs || cpu != j.CPUMilli {
		return fmt.Errorf("allocated %d GPUs and %d milli-CPUs, the pod asked for %d and %d", gpus, cpu, j.GPUs, j.CPUMilli)
	}
	return nil
}
