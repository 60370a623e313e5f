package occupancy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// FileVersion is the snapshot format version this package reads and writes.
const FileVersion = "v1"

// MaxFileBytes bounds what Decode reads: a snapshot of 65,536 nodes is
// about 20 MB.
const MaxFileBytes = 256 << 20

// file is the JSON form of a snapshot (docs/snapshot-format.md).
type file struct {
	Version      string     `json:"version"`
	Cluster      string     `json:"cluster"`
	TopologyHash string     `json:"topology_hash,omitempty"`
	Generation   uint64     `json:"generation"`
	Time         time.Time  `json:"time"`
	Source       string     `json:"source,omitempty"`
	Nodes        []fileNode `json:"nodes"`
	Jobs         []fileJob  `json:"jobs,omitempty"`
	Mix          *Mix       `json:"mix,omitempty"`
	// Bindings are gangtopo's part of pending jobs' fields (binding.go).
	Bindings []fileBinding `json:"bindings,omitempty"`
	// PendingHolds are the holds of pending jobs' decisions (binding.go);
	// absent when the writer does not list pending jobs, [] when none.
	PendingHolds *[]string `json:"pending_holds,omitempty"`
}

type fileNode struct {
	Name          string   `json:"name"`
	State         string   `json:"state"`
	FreeCPUs      *float64 `json:"free_cpus,omitempty"`
	FreeMemoryMiB *int64   `json:"free_memory_mib,omitempty"`
	// GPUFreeMilli lists each GPU's free share by local index. When absent
	// it is derived from the jobs on the node.
	GPUFreeMilli []int `json:"gpu_free_milli,omitempty"`
	// Features are the node's active Slurm features; absent on every node
	// means the snapshot does not report them.
	Features *[]string `json:"features,omitempty"`
}

type fileJob struct {
	ID        string               `json:"id"`
	User      string               `json:"user,omitempty"`
	Partition string               `json:"partition,omitempty"`
	Request   string               `json:"gang_topology,omitempty"`
	Models    []string             `json:"models,omitempty"`
	Nodes     map[string]fileAlloc `json:"nodes"`
}

type fileAlloc struct {
	GPUs   []int   `json:"gpus"`
	Milli  int     `json:"milli,omitempty"` // per GPU; default a whole GPU
	CPUs   float64 `json:"cpus,omitempty"`
	MemMiB int64   `json:"memory_mib,omitempty"`
}

// Meta is what a snapshot says about itself, readable without a cluster.
type Meta struct {
	Version      string
	Cluster      string
	TopologyHash string
	Generation   uint64
	Time         time.Time
	Source       string
}

// Decode reads a JSON snapshot of cluster c. name labels errors (usually the
// file path). It is strict: unknown keys, unknown or duplicate nodes, bad
// states, GPU indices or shares out of range and jobs that do not fit are
// errors. Nodes the file does not mention get state unknown and take no
// work; Missing reports them.
func Decode(r io.Reader, name string, c *topology.Cluster) (*Snapshot, error) {
	f, err := decodeFile(r, name)
	if err != nil {
		return nil, err
	}
	return f.build(name, c)
}

// DecodeMeta reads only a snapshot's header fields.
func DecodeMeta(r io.Reader, name string) (Meta, error) {
	f, err := decodeFile(r, name)
	if err != nil {
		return Meta{}, err
	}
	return Meta{f.Version, f.Cluster, f.TopologyHash, f.Generation, f.Time, f.Source}, nil
}

func decodeFile(r io.Reader, name string) (*file, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s", name, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the snapshot object", name)
	}
	if f.Version != FileVersion {
		return nil, fmt.Errorf("%s: version %q is not supported (want %q)", name, f.Version, FileVersion)
	}
	return &f, nil
}

// describeJSONError adds a line number to encoding/json's errors.
func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("line %d: %v", lineOf(data, syn.Offset), err)
	case errors.As(err, &typ):
		return fmt.Sprintf("line %d: field %s: want %s, got %s", lineOf(data, typ.Offset), typ.Field, typ.Type, typ.Value)
	}
	return err.Error()
}

func lineOf(data []byte, offset int64) int {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

func (f *file) build(name string, c *topology.Cluster) (*Snapshot, error) {
	if f.Cluster != c.Name {
		return nil, fmt.Errorf("%s: snapshot is of cluster %q, topology is of %q", name, f.Cluster, c.Name)
	}
	if f.TopologyHash != "" && f.TopologyHash != c.Hash {
		return nil, fmt.Errorf("%s: snapshot was made against the cluster file with hash %s (the controller daemon's --topology), but the cluster file loaded here has hash %s: the two copies differ; copy the controller's cluster file over this one (or the other way) so both hosts read the same file, and compare with `gangtopo topology hash FILE`", name, f.TopologyHash, c.Hash)
	}
	s := New(c)
	s.Generation, s.Time, s.Mix = f.Generation, f.Time, f.Mix
	for i := range s.State {
		s.State[i] = StateUnknown
	}
	var errs []error
	seen := make([]bool, len(c.Nodes))
	derive := make([]deriveMask, len(c.Nodes)) // what to derive from the jobs
	for i, fn := range f.Nodes {
		if err := s.readNode(i, fn, seen, derive); err != nil {
			errs = append(errs, fmt.Errorf("%s: nodes[%d]: %w", name, i, err))
		}
	}
	for i, fj := range f.Jobs {
		if err := s.readJob(fj, derive); err != nil {
			errs = append(errs, fmt.Errorf("%s: jobs[%d] (id %q): %w", name, i, fj.ID, err))
		}
	}
	if err := s.readBindings(f.Bindings); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if err := s.readPendingHolds(f.PendingHolds); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i := range c.Nodes {
		s.refresh(topology.NodeID(i))
	}
	return s, nil
}

// deriveMask says which of a node's free amounts the file left out, to be
// derived from the jobs running there.
type deriveMask uint8

const (
	deriveGPU deriveMask = 1 << iota
	deriveCPU
	deriveMem
)

func (s *Snapshot) readNode(i int, fn fileNode, seen []bool, derive []deriveMask) error {
	c := s.Cluster
	id, ok := c.NodeByName(fn.Name)
	if !ok {
		return fmt.Errorf("unknown node %q (not in topology %s)", fn.Name, c.Name)
	}
	if seen[id] {
		return fmt.Errorf("node %s listed twice", fn.Name)
	}
	seen[id] = true
	st, err := ParseState(fn.State)
	if err != nil {
		return fmt.Errorf("node %s: %w", fn.Name, err)
	}
	s.State[id] = st
	if fn.Features != nil {
		if s.Features == nil {
			s.Features = make([][]string, len(c.Nodes))
		}
		s.Features[id] = append([]string{}, *fn.Features...)
	}
	node := &c.Nodes[id]
	if fn.FreeCPUs == nil {
		derive[id] |= deriveCPU
	} else {
		if *fn.FreeCPUs < 0 || *fn.FreeCPUs > float64(node.CPUs) {
			return fmt.Errorf("node %s: free_cpus %g out of range 0..%d", fn.Name, *fn.FreeCPUs, node.CPUs)
		}
		s.FreeCPUMilli[id] = int32(*fn.FreeCPUs * 1000)
	}
	if fn.FreeMemoryMiB == nil {
		derive[id] |= deriveMem
	} else {
		if *fn.FreeMemoryMiB < 0 || *fn.FreeMemoryMiB > node.MemoryMiB {
			return fmt.Errorf("node %s: free_memory_mib %d out of range 0..%d", fn.Name, *fn.FreeMemoryMiB, node.MemoryMiB)
		}
		s.FreeMemMiB[id] = *fn.FreeMemoryMiB
	}
	if fn.GPUFreeMilli == nil {
		derive[id] |= deriveGPU
		return nil
	}
	if len(fn.GPUFreeMilli) != node.NumGPUs() {
		return fmt.Errorf("node %s: gpu_free_milli has %d entries, the node has %d GPUs", fn.Name, len(fn.GPUFreeMilli), node.NumGPUs())
	}
	for g, m := range fn.GPUFreeMilli {
		if m < 0 || m > WholeGPU {
			return fmt.Errorf("node %s: gpu_free_milli[%d] = %d out of range 0..%d", fn.Name, g, m, WholeGPU)
		}
		s.FreeMilli[node.GPU(g)] = uint16(m)
	}
	return nil
}

// readJob records a job. On nodes whose GPU frees are derived, the job's
// GPUs are taken from the free capacity; elsewhere they are checked
// against it.
func (s *Snapshot) readJob(fj fileJob, derive []deriveMask) error {
	c := s.Cluster
	if fj.ID == "" {
		return fmt.Errorf("missing id")
	}
	j := Job{ID: fj.ID, User: fj.User, Partition: fj.Partition, Request: fj.Request, Models: fj.Models}
	names := make([]string, 0, len(fj.Nodes))
	for n := range fj.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fa := fj.Nodes[n]
		id, ok := c.NodeByName(n)
		if !ok {
			return fmt.Errorf("unknown node %q", n)
		}
		milli := fa.Milli
		if milli == 0 {
			milli = WholeGPU
		}
		if milli < 0 || milli > WholeGPU {
			return fmt.Errorf("node %s: milli %d out of range 1..%d", n, milli, WholeGPU)
		}
		gpus := append([]int(nil), fa.GPUs...)
		sort.Ints(gpus)
		na := NodeAlloc{Node: id, GPUs: gpus, Milli: uint16(milli), CPUMilli: int32(fa.CPUs * 1000), MemMiB: fa.MemMiB}
		if fa.CPUs < 0 || fa.MemMiB < 0 {
			return fmt.Errorf("node %s: negative cpus or memory_mib", n)
		}
		if err := s.takeForJob(na, derive[id]); err != nil {
			return err
		}
		j.Alloc.Nodes = append(j.Alloc.Nodes, na)
	}
	s.Jobs = append(s.Jobs, j)
	return nil
}

func (s *Snapshot) takeForJob(na NodeAlloc, derive deriveMask) error {
	node := &s.Cluster.Nodes[na.Node]
	for i, g := range na.GPUs {
		if g < 0 || g >= node.NumGPUs() {
			return fmt.Errorf("node %s: GPU index %d out of range 0..%d", node.Name, g, node.NumGPUs()-1)
		}
		if i > 0 && na.GPUs[i-1] == g {
			return fmt.Errorf("node %s: GPU %d listed twice", node.Name, g)
		}
	}
	if derive&deriveGPU != 0 {
		for _, g := range na.GPUs {
			if s.FreeMilli[node.GPU(g)] < na.Milli {
				return fmt.Errorf("node %s: GPU %d is over-committed by the jobs listed", node.Name, g)
			}
			s.FreeMilli[node.GPU(g)] -= na.Milli
		}
	}
	if derive&deriveCPU != 0 {
		if s.FreeCPUMilli[na.Node] < na.CPUMilli {
			return fmt.Errorf("node %s: CPUs over-committed by the jobs listed", node.Name)
		}
		s.FreeCPUMilli[na.Node] -= na.CPUMilli
	}
	if derive&deriveMem != 0 {
		if s.FreeMemMiB[na.Node] < na.MemMiB {
			return fmt.Errorf("node %s: memory over-committed by the jobs listed", node.Name)
		}
		s.FreeMemMiB[na.Node] -= na.MemMiB
	}
	return nil
}

// Encode writes the snapshot as JSON (format v1), nodes in tree order, every
// node with its explicit GPU frees so readers need not derive them.
func (s *Snapshot) Encode(w io.Writer, source string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(s.toFile(source))
}

// EncodeCompact writes the same JSON as Encode without indentation: several
// times faster for a large cluster, whose snapshot the sidecar daemon
// publishes every few seconds.
func (s *Snapshot) EncodeCompact(w io.Writer, source string) error {
	return json.NewEncoder(w).Encode(s.toFile(source))
}

func (s *Snapshot) toFile(source string) file {
	c := s.Cluster
	f := file{Version: FileVersion, Cluster: c.Name, TopologyHash: c.Hash, Generation: s.Generation,
		Time: s.Time.UTC(), Source: source, Mix: s.Mix}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		cpus := float64(s.FreeCPUMilli[i]) / 1000
		mem := s.FreeMemMiB[i]
		fn := fileNode{Name: n.Name, State: s.State[i].String(), FreeCPUs: &cpus, FreeMemoryMiB: &mem,
			GPUFreeMilli: make([]int, n.NumGPUs())}
		for g := range fn.GPUFreeMilli {
			fn.GPUFreeMilli[g] = int(s.FreeMilli[n.GPU(g)])
		}
		if s.Features != nil {
			fs := append([]string{}, s.Features[i]...)
			fn.Features = &fs
		}
		f.Nodes = append(f.Nodes, fn)
	}
	for _, j := range s.Jobs {
		fj := fileJob{ID: j.ID, User: j.User, Partition: j.Partition, Request: j.Request, Models: j.Models, Nodes: map[string]fileAlloc{}}
		for _, na := range j.Alloc.Nodes {
			fa := fileAlloc{GPUs: na.GPUs, CPUs: float64(na.CPUMilli) / 1000, MemMiB: na.MemMiB}
			if na.Milli != WholeGPU {
				fa.Milli = int(na.Milli)
			}
			fj.Nodes[c.Nodes[na.Node].Name] = fa
		}
		f.Jobs = append(f.Jobs, fj)
	}
	f.Bindings = s.fileBindings()
	f.PendingHolds = s.filePendingHolds()
	return f
}

// Missing lists the nodes in an unknown state (not reported by the
// snapshot), compressed as a host list, for warnings.
func (s *Snapshot) Missing() string {
	var names []string
	for i, st := range s.State {
		if st == StateUnknown {
			names = append(names, s.Cluster.Nodes[i].Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return hostlist.Compress(names)
}
