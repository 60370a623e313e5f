package picture

import (
	"hash/fnv"
	"strings"
)

// policyColors are the colours of the policies gangtopo reports on, by
// name: stock Slurm greys, FGD orange, gangtopo blues, the FGD paper's
// other policies muted.
var policyColors = map[string]string{
	"gangtopo":       "#1f77b4",
	"gangtopo-slurm": "#17becf",
	"slurm":          "#7f7f7f",
	"slurm-flat":     "#bcbd22",
	"fgd":            "#ff7f0e",
	"naive-pods":     "#d62728",
	"random":         "#8c564b",
	"dotprod":        "#e377c2",
	"gpuclustering":  "#9467bd",
	"gpupacking":     "#2ca02c",
	"bestfit":        "#98df8a",
}

// spare are the colours of names not in policyColors, picked by a hash of
// the name, so that they too keep their colour from plot to plot.
var spare = []string{"#aec7e8", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#393b79"}

// variantSuffixes mark a policy's variants, drawn in its base's colour.
var variantSuffixes = []string{"+defrag", "+quota", "+hard"}

// Color is the stroke colour of a policy (or any series) name.
func Color(name string) string {
	base := strings.ToLower(name)
	for _, s := range variantSuffixes {
		base = strings.TrimSuffix(base, s)
	}
	if c, ok := policyColors[base]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(base))
	return spare[h.Sum32()%uint32(len(spare))]
}

// Dash is the SVG stroke-dasharray of a name: "" for a policy, dashed for
// its variants, so that gangtopo and gangtopo+defrag share a colour and
// differ in stroke.
func Dash(name string) string {
	lower := strings.ToLower(name)
	for i, s := range variantSuffixes {
		if strings.Contains(lower, s) {
			return []string{"6,3", "2,2", "8,3,2,3"}[i]
		}
	}
	return ""
}
