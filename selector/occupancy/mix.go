package occupancy

// Mix is the cluster's typical request mix as the controller learned it
// from the jobs it saw running (frag.Learner), carried in the snapshot so
// that the plugin measures fragmentation against the jobs this cluster
// really runs. GPU models and tiers are names, as in the cluster file;
// frag.MixWorkload turns a Mix into the engine's frag.Workload.
type Mix struct {
	// Jobs is how many distinct jobs the mix was learned from.
	Jobs  int        `json:"jobs"`
	Node  []MixShape `json:"node,omitempty"`
	Gangs []MixGang  `json:"gangs,omitempty"`
}

// MixShape is a single-node shape: GPUs of Milli each (0 for a CPU-only
// job), CPUMilli in all, on one of Models (empty: any), with its share of
// the jobs.
type MixShape struct {
	GPUs     int      `json:"gpus"`
	Milli    int      `json:"milli"`
	CPUMilli int64    `json:"cpu_milli"`
	Models   []string `json:"models,omitempty"`
	Weight   float64  `json:"weight"`
}

// MixGang is a multi-node shape: Nodes whole nodes in one domain of Tier.
type MixGang struct {
	Nodes  int      `json:"nodes"`
	Tier   string   `json:"tier"`
	Models []string `json:"models,omitempty"`
	Weight float64  `json:"weight"`
}
