package defragrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// PlanVersion is the plan file format this package writes and reads.
const PlanVersion = "v1"

// PlanFile is a plan saved by `gangtopo defrag --save` for `gangtopo
// defrag apply --plan`: which gang, which domain, which jobs, on which
// cluster.
type PlanFile struct {
	Version     string       `json:"version"`
	Cluster     string       `json:"cluster"`
	ClusterHash string       `json:"cluster_hash"`
	Made        time.Time    `json:"made"`
	Gang        string       `json:"gang"`
	GangGPUs    int          `json:"gang_gpus"`
	Request     string       `json:"request"`
	Domain      string       `json:"domain"`
	GangNodes   string       `json:"gang_nodes"`
	Evict       []PlanVictim `json:"evict"`
	Cost        float64      `json:"cost"`
	LostGPUH    float64      `json:"lost_gpu_hours"`
}

// PlanVictim is one job a saved plan takes.
type PlanVictim struct {
	Job   string `json:"job"`
	Nodes string `json:"nodes"`
	GPUs  int    `json:"gpus"`
}

// NewPlanFile records proposal pr, made on cluster c at made.
func NewPlanFile(pr *Proposal, c *topology.Cluster, made time.Time) PlanFile {
	pf := PlanFile{Version: PlanVersion, Cluster: c.Name, ClusterHash: c.Hash, Made: made.UTC(), Gang: pr.Gang.Job.ID,
		GangGPUs: pr.Gang.Request.GPUs, Request: describe(pr.Gang.Request), Domain: pr.Domain, GangNodes: pr.GangNode,
		Evict: []PlanVictim{}, Cost: pr.Plan.Cost, LostGPUH: pr.Lost}
	for _, v := range pr.Victims {
		pf.Evict = append(pf.Evict, PlanVictim{Job: v.ID, Nodes: v.Nodes, GPUs: v.GPUs})
	}
	return pf
}

// ErrNoDir says the directory a plan is to be saved in does not exist.
var ErrNoDir = errors.New("directory does not exist")

// SavePlan writes the plan to path whole or not at all: a temporary file
// in the same directory, synced, renamed over path. An earlier plan at
// path stays until the new one is complete.
func SavePlan(path string, pf PlanFile) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: %w", dir, ErrNoDir)
	}
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadPlan reads a saved plan strictly: unknown fields, another version,
// a plan without a gang or domain are errors naming the file.
func LoadPlan(path string) (PlanFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return PlanFile{}, fmt.Errorf("plan file %s does not exist (write one with gangtopo defrag --job ID --save FILE)", path)
	}
	if err != nil {
		return PlanFile{}, err
	}
	var pf PlanFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return PlanFile{}, fmt.Errorf("plan file %s: not a gangtopo plan: %v", path, err)
	}
	switch {
	case pf.Version != PlanVersion:
		return PlanFile{}, fmt.Errorf("plan file %s: version %q (this gangtopo reads %s)", path, pf.Version, PlanVersion)
	case pf.Gang == "" || pf.Domain == "" || pf.Cluster == "":
		return PlanFile{}, fmt.Errorf("plan file %s: no gang, domain or cluster", path)
	}
	return pf, nil
}

// CheckCluster refuses a plan made on another cluster (its name or its
// topology's content differ).
func (pf PlanFile) CheckCluster(c *topology.Cluster) error {
	if pf.Cluster != c.Name || pf.ClusterHash != c.Hash {
		return fmt.Errorf("the plan was made on cluster %s (topology %.12s), not on %s (topology %.12s): make a plan on this cluster",
			pf.Cluster, pf.ClusterHash, c.Name, c.Hash)
	}
	return nil
}

// Differences says how the proposal made now differs from the saved plan,
// one phrase per job ("" when it names the same jobs on the same nodes, in
// the same domain).
func (pf PlanFile) Differences(pr *Proposal) []string {
	var out []string
	if pr.Domain != pf.Domain {
		out = append(out, fmt.Sprintf("the plan is now for %s, not %s", pr.Domain, pf.Domain))
	}
	now := map[string]Victim{}
	for _, v := range pr.Victims {
		now[v.ID] = v
	}
	saved := map[string]bool{}
	for _, v := range pf.Evict {
		saved[v.Job] = true
		n, ok := now[v.Job]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("job %s (on %s) need not or cannot be requeued any more (ended, moved or protected)", v.Job, v.Nodes))
		case n.Nodes != v.Nodes:
			out = append(out, fmt.Sprintf("job %s runs on %s now, not %s", v.Job, n.Nodes, v.Nodes))
		}
	}
	for _, v := range pr.Victims {
		if !saved[v.ID] {
			out = append(out, fmt.Sprintf("job %s (on %s) would have to be requeued too", v.ID, v.Nodes))
		}
	}
	return out
}
