package controller

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// scaled is a large cluster's recorded Slurm output, grown from the real
// 8-node samples: every node record is a copy of sinfo.json's node03 and
// every job a copy of squeue.json's running job 3, with names, states, GRES
// and allocations rewritten, pretty printed as Slurm prints them.
type scaled struct {
	topology, sinfo, squeue string // file paths
	running, pending, done  int
	busyGPUs, totalGPUs     int
}

// scaleRecorded writes the recorded 8-node output copied factor times: each
// block of 8 nodes is the lab's node01..node08 renamed, with the sample's
// three jobs (two completed, one running on two nodes with 12 GPUs). The
// topology is a fat tree of such 8-CPU, 4000 MiB nodes, 64 per leaf.
func scaleRecorded(t testing.TB, dir string, factor int) *scaled {
	n := 8 * factor
	sc := &scaled{topology: filepath.Join(dir, "cluster.yaml"), sinfo: filepath.Join(dir, "sinfo.json"),
		squeue: filepath.Join(dir, "squeue.json"), totalGPUs: 8 * n, running: factor, done: 2 * factor, busyGPUs: 12 * factor}
	writeFile(t, sc.topology, fatTreeYAML(n/64, 64, 8, 4000))
	rename := func(block int, name string) string {
		var k int
		fmt.Sscanf(name, "node%d", &k)
		return nodeName(block*8 + k - 1)
	}
	sinfo, _ := template(t, "sinfo.json", "nodes", 0)
	squeue, _ := template(t, "squeue.json", "jobs", 0)
	var nodes, jobs []any
	for b := 0; b < factor; b++ {
		for _, rec := range sinfo["nodes"].([]any) {
			n := clone(t, rec.(map[string]any))
			n["name"] = rename(b, n["name"].(string))
			n["hostname"] = n["name"]
			nodes = append(nodes, n)
		}
		for _, rec := range squeue["jobs"].([]any) {
			jobs = append(jobs, renameJob(t, clone(t, rec.(map[string]any)), b, rename))
		}
	}
	sinfo["nodes"], squeue["jobs"] = nodes, jobs
	writeFile(t, sc.sinfo, indentJSON(t, sinfo))
	writeFile(t, sc.squeue, indentJSON(t, squeue))
	return sc
}

func renameJob(t testing.TB, j map[string]any, block int, rename func(int, string) string) map[string]any {
	j["job_id"] = block*3 + int(j["job_id"].(float64))
	names, err := hostlist.Expand(j["nodes"].(string))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = rename(block, names[i])
	}
	j["nodes"] = hostlist.Compress(names)
	res := j["job_resources"].(map[string]any)
	res["nodes"] = j["nodes"]
	for _, a := range res["allocated_nodes"].([]any) {
		a := a.(map[string]any)
		a["nodename"] = rename(block, a["nodename"].(string))
	}
	return j
}

func indentJSON(t testing.TB, v any) []byte {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// philly is the job mix of the stock-Slurm reference runs
// (shared/data/slurm-22.05-reference/sequences/weights.csv).
var philly = []struct {
	gpus   int
	weight float64
}{{1, 0.859}, {2, 0.020}, {4, 0.021}, {8, 0.086}, {16, 0.0104}, {32, 0.0035}}

// scaleUp writes a fat tree of leaves x perLeaf DGX H100 nodes (8 GPUs,
// 224 CPUs) under 4 spines, filled to occupancy with Philly-mix jobs (4
// CPUs and 16 GiB per GPU; 16 and 32 GPUs as 2 and 4 whole nodes in one
// leaf), 1% of nodes drained and 0.5% down, plus pending and completed
// jobs as squeue lists them.
func scaleUp(t testing.TB, dir string, leaves, perLeaf int, occupancy float64) *scaled {
	n := leaves * perLeaf
	sc := &scaled{topology: filepath.Join(dir, "cluster.yaml"), sinfo: filepath.Join(dir, "sinfo.json"),
		squeue: filepath.Join(dir, "squeue.json"), totalGPUs: 8 * n}
	writeFile(t, sc.topology, fatTreeYAML(leaves, perLeaf, 224, 2097152))
	f := newFill(n, perLeaf, rand.New(rand.NewSource(1)))
	for float64(f.busy) < occupancy*float64(sc.totalGPUs) {
		f.place(f.drawSize())
	}
	sc.running, sc.busyGPUs = len(f.jobs), f.busy
	sc.pending, sc.done = n/2, n/4
	writeFile(t, sc.sinfo, f.sinfoJSON(t))
	writeFile(t, sc.squeue, f.squeueJSON(t, sc.pending, sc.done))
	return sc
}

func writeFile(t testing.TB, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func nodeName(i int) string { return fmt.Sprintf("node%04d", i+1) }

func fatTreeYAML(leaves, perLeaf, cpus, memMiB int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `version: v1
name: fattree
hardware:
  dgx-h100:
    cpus: %d
    memory_mib: %d
    gpus: {count: 8, model: h100, memory_mib: 81559, nvlink: nvswitch, links_per_pair: 18, numa: [0, 0, 0, 0, 1, 1, 1, 1]}
nodes:
  - names: node[0001-%04d]
    hardware: dgx-h100
    partitions: [gpu]
topology:
  spines:
`, cpus, memMiB, leaves*perLeaf)
	for s := 0; s < 4; s++ {
		fmt.Fprintf(&b, "    - name: spine%d\n      leaves:\n", s+1)
		for l := s * leaves / 4; l < (s+1)*leaves/4; l++ {
			fmt.Fprintf(&b, "        - {name: leaf%02d, nodes: \"node[%04d-%04d]\"}\n", l+1, l*perLeaf+1, (l+1)*perLeaf)
		}
	}
	return []byte(b.String())
}

// fill places jobs on the nodes the way a scheduler might: small jobs on a
// random node with room, gangs on whole free nodes of one leaf.
type fill struct {
	used    [][]bool // by node, by GPU
	perLeaf int
	rng     *rand.Rand
	busy    int
	jobs    []fakeJob
}

type fakeJob struct {
	nodes []int
	gpus  [][]int // per node
}

func newFill(n, perLeaf int, rng *rand.Rand) *fill {
	f := &fill{used: make([][]bool, n), perLeaf: perLeaf, rng: rng}
	for i := range f.used {
		f.used[i] = make([]bool, 8)
	}
	return f
}

func (f *fill) drawSize() int {
	x := f.rng.Float64()
	for _, p := range philly {
		if x < p.weight {
			return p.gpus
		}
		x -= p.weight
	}
	return 1
}

func (f *fill) free(i int) []int {
	var out []int
	for g, u := range f.used[i] {
		if !u {
			out = append(out, g)
		}
	}
	return out
}

func (f *fill) place(size int) {
	if size > 8 {
		f.placeGang(size / 8)
		return
	}
	for try := 0; try < 64; try++ {
		i := f.rng.Intn(len(f.used))
		if free := f.free(i); len(free) >= size {
			f.take(fakeJob{nodes: []int{i}, gpus: [][]int{free[:size]}})
			return
		}
	}
}

func (f *fill) placeGang(k int) {
	for l := 0; l < len(f.used)/f.perLeaf; l++ {
		var whole []int
		for i := l * f.perLeaf; i < (l+1)*f.perLeaf && len(whole) < k; i++ {
			if len(f.free(i)) == 8 {
				whole = append(whole, i)
			}
		}
		if len(whole) == k {
			j := fakeJob{nodes: whole}
			for range whole {
				j.gpus = append(j.gpus, []int{0, 1, 2, 3, 4, 5, 6, 7})
			}
			f.take(j)
			return
		}
	}
}

func (f *fill) take(j fakeJob) {
	for k, i := range j.nodes {
		for _, g := range j.gpus[k] {
			f.used[i][g] = true
			f.busy++
		}
	}
	f.jobs = append(f.jobs, j)
}

// template reads one record of a sample file as a generic JSON object.
func template(t testing.TB, file, list string, index int) (doc map[string]any, rec map[string]any) {
	data, err := os.ReadFile(filepath.Join(testdata, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, doc[list].([]any)[index].(map[string]any)
}

// clone deep-copies a JSON object through encoding.
func clone(t testing.TB, v map[string]any) map[string]any {
	data, _ := json.Marshal(v)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// rangeList formats ascending indices as Slurm's bit_fmt does: "0-3,6".
func rangeList(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func (f *fill) sinfoJSON(t testing.TB) []byte {
	doc, tmpl := template(t, "sinfo.json", "nodes", 2)
	nodes := make([]any, len(f.used))
	for i := range f.used {
		n := clone(t, tmpl)
		var busy []int
		for g, u := range f.used[i] {
			if u {
				busy = append(busy, g)
			}
		}
		state, flags, used := "idle", []any{}, "gpu:h100:0(IDX:N/A)"
		if len(busy) > 0 {
			state, used = "mixed", fmt.Sprintf("gpu:h100:%d(IDX:%s)", len(busy), rangeList(busy))
		}
		switch {
		case i%100 == 7:
			flags = []any{"DRAIN"}
		case i%200 == 13 && len(busy) == 0:
			state, flags = "down", []any{"NOT_RESPONDING"}
		}
		leaf := fmt.Sprintf("leaf%02d", i/f.perLeaf+1)
		for k, v := range map[string]any{"name": nodeName(i), "hostname": nodeName(i), "state": state, "state_flags": flags,
			"cpus": 224, "cores": 56, "sockets": 2, "threads": 2, "alloc_cpus": 4 * len(busy), "idle_cpus": 224 - 4*len(busy),
			"real_memory": 2097152, "alloc_memory": 16384 * len(busy), "gres": "gpu:h100:8(S:0-1)", "gres_used": used,
			"features": leaf, "active_features": leaf, "tres": "cpu=224,mem=2T,billing=224,gres/gpu=8"} {
			n[k] = v
		}
		nodes[i] = n
	}
	doc["nodes"] = nodes
	return indentJSON(t, doc)
}

func (f *fill) squeueJSON(t testing.TB, pending, done int) []byte {
	doc, tmpl := template(t, "squeue.json", "jobs", 2)
	var jobs []any
	for i, j := range f.jobs {
		jobs = append(jobs, f.jobRecord(t, tmpl, 1000+i, j, "RUNNING"))
	}
	for i := 0; i < done; i++ { // finished recently: squeue still lists them
		jobs = append(jobs, f.jobRecord(t, tmpl, 100000+i, f.jobs[i%len(f.jobs)], "COMPLETED"))
	}
	for i := 0; i < pending; i++ {
		p := clone(t, tmpl)
		p["job_id"], p["job_state"], p["state_reason"], p["nodes"], p["gres_detail"] = 200000+i, "PENDING", "Resources", "", []any{}
		delete(p, "job_resources")
		jobs = append(jobs, p)
	}
	doc["jobs"] = jobs
	return indentJSON(t, doc)
}

func (f *fill) jobRecord(t testing.TB, tmpl map[string]any, id int, j fakeJob, state string) map[string]any {
	r := clone(t, tmpl)
	names := make([]string, len(j.nodes))
	var alloc, detail []any
	cpus := 0
	for k, i := range j.nodes {
		names[k] = nodeName(i)
		sockets := map[string]any{}
		for _, g := range j.gpus[k] {
			s := fmt.Sprint(g / 4)
			if sockets[s] == nil {
				sockets[s] = map[string]any{"cores": map[string]any{}}
			}
			cores := sockets[s].(map[string]any)["cores"].(map[string]any)
			for c := 0; c < 2; c++ { // 4 CPUs per GPU: 2 cores x 2 threads
				cores[fmt.Sprint((g%4)*2+c)] = "allocated"
			}
		}
		cpus += 4 * len(j.gpus[k])
		alloc = append(alloc, map[string]any{"sockets": sockets, "nodename": names[k], "cpus_used": 0, "memory_used": 0,
			"memory_allocated": 16384 * len(j.gpus[k])})
		detail = append(detail, fmt.Sprintf("gpu:h100:%d(IDX:%s)", len(j.gpus[k]), rangeList(j.gpus[k])))
	}
	list := hostlist.Compress(names)
	r["job_id"], r["job_state"], r["user_name"], r["nodes"], r["cpus"], r["node_count"] = id, state, fmt.Sprintf("user%03d", id%300), list, cpus, len(names)
	r["gres_detail"] = detail
	r["job_resources"] = map[string]any{"nodes": list, "allocated_cores": cpus / 2, "allocated_hosts": len(names), "allocated_nodes": alloc}
	if len(names) > 1 {
		r["admin_comment"] = "gangtopo v1 placed request=leaf:required gpus=16 snapshot=1: placed"
	}
	return r
}
