package stockslurm

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// refDirEnv overrides where the Slurm reference runs are read from.
const refDirEnv = "GANGTOPO_SLURM_REFERENCE"

// refDir is ../shared/data/slurm-22.05-reference seen from the repository
// root, as in CI, unless refDirEnv says otherwise.
func refDir() string {
	if d := os.Getenv(refDirEnv); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "..", "shared", "data", "slurm-22.05-reference")
}

// csvTable is a CSV file read by column name.
type csvTable struct {
	name string
	cols map[string]int
	rows [][]string
}

func readCSV(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty file", path)
	}
	t := &csvTable{name: filepath.Base(path), cols: map[string]int{}, rows: recs[1:]}
	for i, h := range recs[0] {
		t.cols[h] = i
	}
	return t, nil
}

// get returns row r's column; a missing column is a broken file.
func (t *csvTable) get(r int, col string) string {
	c, ok := t.cols[col]
	if !ok {
		panic(fmt.Sprintf("%s: no column %q", t.name, col))
	}
	return t.rows[r][c]
}

// placement is a node -> GPU indices map, the unit of comparison.
type placement map[string][]int

func (p placement) String() string {
	if p == nil {
		return "PENDING"
	}
	var names []string
	for n := range p {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+":"+fmtIdx(p[n]))
	}
	return strings.Join(parts, ";")
}

func (p placement) equal(q placement) bool {
	if (p == nil) != (q == nil) || len(p) != len(q) {
		return false
	}
	for n, g := range p {
		if !slices.Equal(g, q[n]) {
			return false
		}
	}
	return true
}

// parseIdx reads "0-3", "4,7" or "1-3,5-7" (empty: none).
func parseIdx(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	g, err := hostlist.Indices(s, maxRefIndex)
	if err != nil {
		return nil, fmt.Errorf("GPU index list: %w", err)
	}
	return g, nil
}

// maxRefIndex bounds the reference data's GPU indices (8 per node there).
const maxRefIndex = 1024

func fmtIdx(g []int) string {
	var parts []string
	for _, x := range g {
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, ",")
}

// parsePerNode reads "node01:0-3;node02:0-1".
func parsePerNode(s string) (placement, error) {
	p := placement{}
	for _, part := range strings.Split(s, ";") {
		node, idx, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not node:indices", part)
		}
		g, err := parseIdx(idx)
		if err != nil {
			return nil, err
		}
		p[node] = g
	}
	return p, nil
}

// parseFlags turns the sbatch flags of the reference runs into a Job.
func parseFlags(flags string) (Job, error) {
	j := Job{CPUsPerTask: 1}
	f := strings.Fields(flags)
	for k := 0; k < len(f); k++ {
		key, val, _ := strings.Cut(f[k], "=")
		if key == "-N" && k+1 < len(f) {
			k++
			val = f[k]
		}
		n, err := strconv.Atoi(strings.TrimPrefix(val, "gpu:"))
		if err != nil {
			return j, fmt.Errorf("flags %q: %s: %w", flags, f[k], err)
		}
		switch key {
		case "-N":
			j.MinNodes, j.MaxNodes = n, n
		case "--gpus":
			j.GPUsPerJob = n
		case "--gpus-per-node", "--gres":
			j.GPUsPerNode = n
		case "--cpus-per-gpu":
			j.CPUsPerGPU = n
		case "--cpus-per-task":
			j.CPUsPerTask = n
		case "--switches":
			j.Switches = n
		default:
			return j, fmt.Errorf("flags %q: unknown option %s", flags, key)
		}
	}
	j.CPUMilli = int64(max(j.CPUsPerGPU*j.gpus(), j.CPUsPerTask*max(j.MinNodes, 1))) * 1000
	return j, nil
}

// expandNodes expands a Slurm NodeList.
func expandNodes(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	return hostlist.Expand(s)
}
