package ctld

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/request"
)

// ConfigVersion is the gangtopo.yaml format this package reads.
const ConfigVersion = "v1"

// DefaultConfigPath is where slurmctld's plugin looks for its configuration
// unless GANGTOPO_CONFIG (in slurmctld's environment) says otherwise.
const DefaultConfigPath = "/etc/slurm/gangtopo.yaml"

// slurm_topology values: the topology plugin slurmctld runs.
const (
	SlurmTopologyTree  = "tree"
	SlurmTopologyFlat  = "flat"
	SlurmTopologyBlock = "block"
)

// FailMode says what happens to a job when gangtopo cannot decide.
type FailMode string

// Failure modes.
const (
	FailOpen   FailMode = "open"   // leave the job as submitted
	FailClosed FailMode = "closed" // refuse it with a message
)

// Config is gangtopo.yaml (docs/admin.md, "gangtopo.yaml"): the decision's
// policy (jobsubmit.Policy: scope, default option, partitions, feature
// prefix, decision field) and how the plugin runs.
type Config struct {
	jobsubmit.Policy
	Version  string
	Topology string // cluster file (selector/topology v1 YAML)
	Snapshot string // occupancy snapshot (selector/occupancy v1 JSON)
	// DefaultTopology is default_topology as written; parsed into
	// Policy.Default.
	DefaultTopology string
	// SlurmTopology is slurm_topology, the TopologyPlugin slurmctld runs:
	// tree, flat, or block (24.05+, over the cluster file's blocks), which
	// sets Policy.SlurmBlock: the rewrite adds --segment.
	SlurmTopology string
	OnFailure     FailMode
	// MaxSnapshotAge: an older snapshot is not used (the job is left alone).
	MaxSnapshotAge time.Duration
	// ReloadInterval: how often the snapshot file is checked for a new
	// generation, in the background (never inside a job_submit call).
	ReloadInterval time.Duration
	// Deadline bounds one placement inside job_submit.
	Deadline time.Duration
	// PendingHold: a decision's GPUs are counted as taken on top of any
	// snapshot taken less than PendingHold after it (the job has not
	// started yet, or the snapshot does not show it yet).
	PendingHold time.Duration
	// TrustedUIDs may own the topology and snapshot files, besides root and
	// the user slurmctld runs as.
	TrustedUIDs []int
	// GoMaxProcs is the Go runtime's GOMAXPROCS inside slurmctld (0: Go's
	// own choice, the GOMAXPROCS environment variable or the CPU count).
	// The Go side decides one job at a time, so 1 is enough: more only
	// adds threads that spin up for every goroutine hand-off and GC workers
	// on every core, all in slurmctld's process (docs/admin.md).
	GoMaxProcs int
	// Rebind is the rebind: section: the controller daemon's re-binding of
	// stale pending jobs (config_rebind.go). The plugin only checks it.
	Rebind RebindConfig
	// Defrag is the defrag: section: what `gangtopo defrag apply` and the
	// controller may requeue, within which limits (config_defrag.go). The
	// plugin only checks it.
	Defrag DefragConfig
	// Quota is the quota: section: accounts' guaranteed GPU shares, which
	// the controller keeps in Slurm's QOS (config_quota.go). The plugin
	// only checks it.
	Quota QuotaConfig
	// Actions is the actions: section: the rules every change gangtopo
	// makes in Slurm passes through (config_actions.go). The plugin only
	// checks it.
	Actions ActionsConfig
}

// Defaults returns every default, in one place.
func Defaults() Config {
	return Config{
		Policy:          jobsubmit.DefaultPolicy(),
		Version:         ConfigVersion,
		DefaultTopology: "any:preferred",
		SlurmTopology:   SlurmTopologyTree,
		OnFailure:       FailOpen,
		MaxSnapshotAge:  60 * time.Second,
		ReloadInterval:  time.Second,
		Deadline:        50 * time.Millisecond,
		PendingHold:     10 * time.Second,
		GoMaxProcs:      1,
		Rebind:          DefaultRebind(),
		Defrag:          DefaultDefrag(),
		Quota:           DefaultQuota(),
		Actions:         DefaultActions(),
	}
}

// LoadConfig reads a config file. The file is checked as the topology
// and snapshot files are (openChecked), and more strictly: it names those
// files and may add trusted_uids, so only root and slurmctld's own user
// may own it.
func LoadConfig(path string) (Config, error) {
	f, _, err := openChecked("configuration", path, trustedUIDs(Config{}))
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	return ParseConfig(f, path)
}

// ParseConfig reads gangtopo.yaml strictly: unknown keys, a missing or
// unsupported version, bad values and missing paths are errors naming
// name:line and the key. name labels the errors (usually the path).
func ParseConfig(r io.Reader, name string) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if err == io.EOF {
			return Config{}, fmt.Errorf("%s: empty file (want `version: %s` and the keys of docs/admin.md)", name, ConfigVersion)
		}
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Config{}, fmt.Errorf("%s:%d: want a mapping of settings", name, root.Line)
	}
	c := Defaults()
	c.Version = ""
	p := configParser{name: name, c: &c}
	p.read(root)
	p.check(root)
	if len(p.errs) > 0 {
		return Config{}, errors.Join(p.errs...)
	}
	return c, nil
}

type configParser struct {
	name string
	c    *Config
	errs []error
	// auditSet, defragAuditSet: actions.audit_log, defrag.audit_log given
	// (checkAuditLog).
	auditSet, defragAuditSet bool
}

func (p *configParser) errorf(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s: %s", p.name, n.Line, key, fmt.Sprintf(format, args...)))
}

// keys maps each setting to its reader; the order of keyNames is the order
// in error messages.
func (p *configParser) keys() map[string]func(*yaml.Node, string) {
	c := p.c
	return map[string]func(*yaml.Node, string){
		"version":          func(v *yaml.Node, k string) { p.str(v, k, &c.Version) },
		"topology":         func(v *yaml.Node, k string) { p.str(v, k, &c.Topology) },
		"snapshot":         func(v *yaml.Node, k string) { p.str(v, k, &c.Snapshot) },
		"jobs":             func(v *yaml.Node, k string) { p.enum(v, k, (*string)(&c.Jobs), "gang", "gpu", "all") },
		"default_topology": func(v *yaml.Node, k string) { p.str(v, k, &c.DefaultTopology) },
		"slurm_topology": func(v *yaml.Node, k string) {
			p.enum(v, k, &c.SlurmTopology, SlurmTopologyTree, SlurmTopologyFlat, SlurmTopologyBlock)
		},
		"on_failure":       func(v *yaml.Node, k string) { p.enum(v, k, (*string)(&c.OnFailure), "open", "closed") },
		"max_snapshot_age": func(v *yaml.Node, k string) { p.duration(v, k, time.Second, 24*time.Hour, &c.MaxSnapshotAge) },
		"reload_interval":  func(v *yaml.Node, k string) { p.duration(v, k, 10*time.Millisecond, time.Hour, &c.ReloadInterval) },
		"deadline":         func(v *yaml.Node, k string) { p.duration(v, k, time.Millisecond, 5*time.Second, &c.Deadline) },
		"pending_hold":     func(v *yaml.Node, k string) { p.duration(v, k, 0, time.Hour, &c.PendingHold) },
		"decision_field": func(v *yaml.Node, k string) {
			p.enum(v, k, &c.DecisionField, jobsubmit.FieldAdminComment, jobsubmit.FieldComment)
		},
		"feature_prefix":   func(v *yaml.Node, k string) { p.str(v, k, &c.FeaturePrefix) },
		"partitions":       func(v *yaml.Node, k string) { p.partitions(v, k, &c.Partitions) },
		"trusted_uids":     func(v *yaml.Node, k string) { p.ints(v, k, &c.TrustedUIDs) },
		"go_max_procs":     func(v *yaml.Node, k string) { p.count(v, k, 0, maxGoMaxProcs, &c.GoMaxProcs) },
		"bind_nodes":       func(v *yaml.Node, k string) { p.count(v, k, 0, jobsubmit.MaxBindNodes, &c.BindNodes) },
		"shards_per_gpu":   func(v *yaml.Node, k string) { p.count(v, k, 0, maxShardsPerGPU, &c.ShardsPerGPU) },
		"whole_node_gangs": func(v *yaml.Node, k string) { p.boolean(v, k, &c.WholeNodeGangs) },
		"rebind":           p.rebind,
		"defrag":           p.defrag,
		"quota":            p.quota,
		"actions":          p.actions,
		"spares":           p.spares,
	}
}

func (p *configParser) read(root *yaml.Node) {
	keys := p.keys()
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		fn, ok := keys[k.Value]
		switch {
		case !ok:
			p.errorf(k, k.Value, "unknown key (want one of %s)", strings.Join(sortedKeys(keys), ", "))
		case seen[k.Value]:
			p.errorf(k, k.Value, "given twice")
		default:
			seen[k.Value] = true
			fn(v, k.Value)
		}
	}
}

// check validates what single keys cannot: required keys and the version.
func (p *configParser) check(root *yaml.Node) {
	c := p.c
	switch {
	case c.Version == "":
		p.errorf(root, "version", "missing (want `version: %s`)", ConfigVersion)
	case c.Version != ConfigVersion:
		p.errorf(root, "version", "unsupported version %q (this gangtopo reads %s)", c.Version, ConfigVersion)
	}
	if c.Topology == "" {
		p.errorf(root, "topology", "missing (the cluster file, e.g. /etc/gangtopo/cluster.yaml)")
	}
	if c.Snapshot == "" {
		p.errorf(root, "snapshot", "missing (the occupancy snapshot the daemon writes, e.g. /var/lib/gangtopo/snapshot.json)")
	}
	if c.FeaturePrefix != "" && !jobsubmit.ValidFeature(c.FeaturePrefix) {
		p.errorf(root, "feature_prefix", "%q may only hold letters, digits and _ . + - (and must match what `gangtopo gen features` wrote)", c.FeaturePrefix)
	}
	c.SlurmBlock = c.SlurmTopology == SlurmTopologyBlock
	o, err := request.ParseOption(c.DefaultTopology)
	if err != nil {
		p.errorf(root, "default_topology", "%v", err)
	}
	c.Default = o
	p.checkAuditLog(root)
	p.checkSpares(root)
}

func sortedKeys(m map[string]func(*yaml.Node, string)) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (p *configParser) str(v *yaml.Node, key string, dst *string) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.errorf(v, key, "want a string")
		return
	}
	*dst = v.Value
}

func (p *configParser) enum(v *yaml.Node, key string, dst *string, allowed ...string) {
	var s string
	p.str(v, key, &s)
	for _, a := range allowed {
		if s == a {
			*dst = s
			return
		}
	}
	if v.Kind == yaml.ScalarNode {
		p.errorf(v, key, "%q is not allowed (want %s)", s, strings.Join(allowed, " or "))
	}
}

func (p *configParser) duration(v *yaml.Node, key string, lo, hi time.Duration, dst *time.Duration) {
	var s string
	p.str(v, key, &s)
	d, err := time.ParseDuration(s)
	switch {
	case v.Kind != yaml.ScalarNode:
	case err != nil:
		p.errorf(v, key, "%q is not a duration (want e.g. 500ms, 30s, 2m)", s)
	case d < lo || d > hi:
		p.errorf(v, key, "%v out of range (want %v..%v)", d, lo, hi)
	default:
		*dst = d
	}
}

// partitions reads a list of Slurm partition names. Slurm's names have no
// blanks or commas (a job's partition list is comma-separated), so one that
// does is a typo, refused here rather than never matching a job.
func (p *configParser) partitions(v *yaml.Node, key string, dst *[]string) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, key, "want a list of partition names")
		return
	}
	for _, e := range v.Content {
		var s string
		p.str(e, key, &s)
		if s == "" || strings.ContainsAny(s, ", \t") {
			p.errorf(e, key, "%q is not a partition name (no blanks or commas; give each partition as its own list item)", s)
			continue
		}
		*dst = append(*dst, s)
	}
}

// maxShardsPerGPU bounds shards_per_gpu: far above any gres.conf.
const maxShardsPerGPU = 1 << 20

// maxGoMaxProcs bounds go_max_procs: a typo must not start thousands of
// threads inside slurmctld.
const maxGoMaxProcs = 256

func (p *configParser) count(v *yaml.Node, key string, lo, hi int, dst *int) {
	n, err := strconv.Atoi(v.Value)
	switch {
	case v.Kind != yaml.ScalarNode || err != nil:
		p.errorf(v, key, "%q is not a whole number (want %d..%d)", v.Value, lo, hi)
	case n < lo || n > hi:
		p.errorf(v, key, "%d out of range (want %d..%d)", n, lo, hi)
	default:
		*dst = n
	}
}

func (p *configParser) ints(v *yaml.Node, key string, dst *[]int) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, key, "want a list of numbers")
		return
	}
	for _, e := range v.Content {
		n, err := strconv.Atoi(e.Value)
		if e.Kind != yaml.ScalarNode || err != nil || n < 0 {
			p.errorf(e, key, "%q is not a user ID", e.Value)
			continue
		}
		*dst = append(*dst, n)
	}
}
