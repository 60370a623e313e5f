package traces

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Published is one row of the FGD authors' merged results: one workload,
// policy and seed, with one value per arrived-workload percentage 0..130.
type Published struct {
	Workload string // e.g. "default" (the "openb_pod_list_" prefix is dropped)
	Policy   string // e.g. "FGD" (the "06-" prefix is dropped)
	Seed     int64
	Values   [131]float64
}

// The three result files of the FGD repository's experiments/analysis.
const (
	PublishedAlloc     = "analysis_allo_discrete.csv"       // GPU allocation %
	PublishedFrag      = "analysis_frag_discrete.csv"       // frag amount, % of cluster GPUs
	PublishedFragRatio = "analysis_frag_ratio_discrete.csv" // frag amount, % of idle GPUs
)

// ReadPublished reads one of the FGD expected_results files from dir.
func ReadPublished(dir, file string) ([]Published, error) {
	path := filepath.Join(dir, file)
	t, f, err := openTable(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cols := []string{"workload", "sc_policy", "seed"}
	for i := 0; i <= 130; i++ {
		cols = append(cols, strconv.Itoa(i))
	}
	if err := t.require(cols...); err != nil {
		return nil, err
	}
	var out []Published
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return out, err
		}
		p, err := t.published()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
}

func (t *table) published() (Published, error) {
	p := Published{
		Workload: strings.TrimPrefix(t.str("workload"), "openb_pod_list_"),
		Policy:   t.str("sc_policy"),
	}
	if i := strings.IndexByte(p.Policy, '-'); i >= 0 {
		p.Policy = p.Policy[i+1:]
	}
	if p.Workload == "" || p.Policy == "" {
		return p, fmt.Errorf("%s:%d: empty workload or policy", t.name, t.line)
	}
	var err error
	if p.Seed, err = t.int("seed", 0, 1<<62); err != nil {
		return p, err
	}
	for i := range p.Values {
		if p.Values[i], err = t.float(strconv.Itoa(i), 0, 100); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Published3 joins the three result files: one workload, policy and seed.
type Published3 struct {
	Workload, Policy string
	Seed             int64
	Alloc            [131]float64 // GPU allocation %
	FragAmount       [131]float64 // % of cluster GPUs
	FragRatio        [131]float64 // % of idle GPUs
}

// ReadPublished3 reads and joins the three files in dir.
func ReadPublished3(dir string) ([]Published3, error) {
	type key struct {
		w, p string
		s    int64
	}
	var out []Published3
	at := map[key]int{}
	for fi, file := range []string{PublishedAlloc, PublishedFrag, PublishedFragRatio} {
		rows, err := ReadPublished(dir, file)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			k := key{r.Workload, r.Policy, r.Seed}
			i, ok := at[k]
			if !ok {
				if fi > 0 {
					return nil, fmt.Errorf("%s: %s, %s, seed %d is not in %s", filepath.Join(dir, file), r.Workload, r.Policy, r.Seed, PublishedAlloc)
				}
				i = len(out)
				at[k] = i
				out = append(out, Published3{Workload: r.Workload, Policy: r.Policy, Seed: r.Seed})
			}
			switch fi {
			case 0:
				out[i].Alloc = r.Values
			case 1:
				out[i].FragAmount = r.Values
			case 2:
				out[i].FragRatio = r.Values
			}
		}
	}
	return out, nil
}
