package jobsubmit

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Scope says which jobs gangtopo places.
type Scope string

// Scopes.
const (
	ScopeGang Scope = "gang" // only jobs with --gang-topology (or GANGTOPO_TOPOLOGY)
	ScopeGPU  Scope = "gpu"  // every job that asks for GPUs
	// ScopeAll adds jobs without GPUs that run on the nodes of the
	// cluster file: their CPUs and memory cost GPUs too (a GPU left
	// without CPUs is lost), so they are placed where they cost least.
	ScopeAll Scope = "all"
)

// DecisionField values: where the decision line goes.
const (
	FieldAdminComment = "admin_comment"
	FieldComment      = "comment"
)

// Policy is the part of gangtopo.yaml that shapes a decision. The rest of
// the file (where the files are, deadlines, what to do on a failure) is the
// plugin's business at the edge (spank/ctld); the simulator sets a Policy
// directly.
type Policy struct {
	Jobs Scope
	// Default applies to GPU jobs without an option when Jobs is ScopeGPU.
	Default request.Option
	// Partitions limits gangtopo to jobs in these partitions (empty: all).
	Partitions []string
	// FeaturePrefix starts every node feature gangtopo binds to.
	FeaturePrefix string
	// DecisionField is where the one-line decision goes: FieldAdminComment
	// or FieldComment.
	DecisionField string
	// BindNodes is how many of the engine's ranked nodes a one-node job is
	// bound to (nodebind.go); 0 turns node binding off.
	BindNodes int
	// ShardsPerGPU is gres.conf's shard count per GPU (Name=shard
	// Count=...): a --gres=shard:N job asks N/ShardsPerGPU of one GPU.
	// 0: shard jobs are left to Slurm.
	ShardsPerGPU int
	// SlurmBlock says Slurm runs topology/block over the cluster file's
	// blocks (gangtopo.yaml slurm_topology: block; Slurm 24.05+): the
	// rewrite then states the NVLink rule as --segment too (segment.go).
	SlurmBlock bool
	// Spares are the nodes kept per domain for gangs that restart after a
	// node failure (spares.go).
	Spares Spares
	// WholeNodeGangs places gangs that give only a GPU total, a multiple
	// of a node's, on whole nodes (wholenodes.go).
	WholeNodeGangs bool
}

// DefaultBindNodes is how many ranked nodes a one-node job is bound to
// by default: the engine's default candidate count.
const DefaultBindNodes = 8

// DefaultPolicy is the policy of a gangtopo.yaml that sets none of its
// keys: jobs with --gang-topology only, any:preferred for GPU jobs under
// jobs: gpu, the decision in AdminComment.
func DefaultPolicy() Policy {
	return Policy{
		Jobs:          ScopeGang,
		Default:       request.Option{Tier: topology.TierCluster, Mode: request.Preferred},
		FeaturePrefix: DefaultFeaturePrefix,
		DecisionField: FieldAdminComment,
		BindNodes:     DefaultBindNodes,
		Spares:        Spares{Tier: topology.TierLeaf},
	}
}

// EngineOptions are the engine options the decision needs: enough ranked
// candidates for the node binding, and the workload fragmentation is
// measured against (nil: the engine's default mix).
func (p Policy) EngineOptions(w *frag.Workload) place.Options {
	return place.Options{Workload: w, MaxCandidates: max(p.BindNodes, 8)}
}
