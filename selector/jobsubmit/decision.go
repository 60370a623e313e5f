package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"
)

// Decision is the one line gangtopo writes into a job (its AdminComment or
// Comment, per decision_field) and logs: what it decided and why. `gangtopo
// why JOBID` reads it back.
//
// Form: "gangtopo v1 VERDICT key=value ...: free text", for example
//
//	gangtopo v1 placed request=leaf:required gpus=32 shape=4x8 domain=leaf4 tier=leaf bound=leaf4,leaf3 snapshot=42: leaf4 has 4 whole free nodes
//
// Values never contain blanks; the text after ": " is for people.
type Decision struct {
	Verdict Verdict
	// Cause says why a job was left as submitted (VerdictUntouched), for
	// the controller's count of such jobs; "" for a failure to decide.
	Cause    Cause
	Request  string   // canonical --gang-topology value
	GPUs     int      // GPUs of the gang (of each task, for an array)
	Tasks    int      // a job array's tasks the decision placed at once (tasks.go); 0 for a job
	Shape    string   // "4x8" when gangtopo set nodes x GPUs per node
	Segment  int      // Slurm's --segment gangtopo set (segment.go), 0 when none
	Domain   string   // the domain the engine chose
	Tier     string   // its tier
	Bound    []string // domains the job is bound to (features), best first
	Excluded string   // nodes gangtopo added to the job's ExcNodeList (a host list)
	// Spares are the domains whose spare nodes the job may use (a gang
	// re-bound after a node failure, spares.go).
	Spares []string
	// Models are the GPU models the job accepts, when it named any (typed
	// GRES or a constraint on model features): the controller learns the
	// cluster's model-constrained demand from them (frag.Learner), which
	// it cannot read from where a job runs.
	Models   []string
	Snapshot uint64 // snapshot generation used
	// Hold names the plugin's hold on the placed job's GPUs (spank/ctld,
	// Store): the controller lists the holds of the pending jobs it sees,
	// so a hold whose job is gone (cancelled, refused after job_submit, or
	// started) is let go at the next snapshot instead of after
	// pending_hold. "" when the decision holds nothing.
	Hold string
	Text string
}

// Verdict says what happened to a job.
type Verdict string

// Verdicts.
const (
	VerdictPlaced    Verdict = "placed"    // rewritten to start in Domain
	VerdictWaiting   Verdict = "waiting"   // no domain free now: bound to Bound, pending
	VerdictWider     Verdict = "wider"     // preferred tier full: may start wider
	VerdictUntouched Verdict = "untouched" // left as submitted (failure, fail-open)
	VerdictRefused   Verdict = "refused"   // rejected at submit
)

// Cause says why gangtopo left a job it could have placed as submitted.
type Cause string

// Causes.
const (
	// CauseNotCovered: the job names a partition or node the cluster file
	// does not have (the file is out of date, or was built without the
	// partitions).
	CauseNotCovered Cause = "not_covered"
	// CauseUnsupported: a request gangtopo does not translate (GPUs per
	// socket, a node count range).
	CauseUnsupported Cause = "unsupported"
	// CauseOutOfScope: an explicit --gang-topology in a partition outside
	// gangtopo.yaml's partitions.
	CauseOutOfScope Cause = "out_of_scope"
)

const decisionMagic = "gangtopo v1 "

// String renders the decision line.
func (d Decision) String() string {
	var b strings.Builder
	b.WriteString(decisionMagic)
	b.WriteString(string(d.Verdict))
	kv := func(k, v string) {
		if v != "" {
			b.WriteString(" " + k + "=" + strings.ReplaceAll(v, " ", "_"))
		}
	}
	kv("cause", string(d.Cause))
	kv("request", d.Request)
	if d.GPUs > 0 {
		kv("gpus", strconv.Itoa(d.GPUs))
	}
	if d.Tasks > 0 {
		kv("tasks", strconv.Itoa(d.Tasks))
	}
	kv("shape", d.Shape)
	if d.Segment > 0 {
		kv("segment", strconv.Itoa(d.Segment))
	}
	kv("domain", d.Domain)
	kv("tier", d.Tier)
	kv("bound", strings.Join(d.Bound, ","))
	kv("excluded", d.Excluded)
	kv("spares", strings.Join(d.Spares, ","))
	kv("models", strings.Join(d.Models, ","))
	if d.Snapshot > 0 {
		kv("snapshot", strconv.FormatUint(d.Snapshot, 10))
	}
	kv("hold", d.Hold)
	if d.Text != "" {
		b.WriteString(": " + d.Text)
	}
	return b.String()
}

// ParseDecision finds a decision line in a job's comment and reads it.
func ParseDecision(s string) (Decision, error) {
	i := strings.Index(s, decisionMagic)
	if i < 0 {
		return Decision{}, fmt.Errorf("no gangtopo decision in %q", s)
	}
	s = s[i+len(decisionMagic):]
	head, text, _ := strings.Cut(s, ": ")
	f := strings.Fields(head)
	if len(f) == 0 {
		return Decision{}, fmt.Errorf("decision without a verdict")
	}
	d := Decision{Verdict: Verdict(f[0]), Text: strings.TrimSpace(text)}
	switch d.Verdict {
	case VerdictPlaced, VerdictWaiting, VerdictWider, VerdictUntouched, VerdictRefused:
	default:
		return Decision{}, fmt.Errorf("unknown verdict %q", f[0])
	}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Decision{}, fmt.Errorf("decision field %q is not key=value", kv)
		}
		if v == "" {
			continue // String never writes empty values
		}
		if err := d.set(k, v); err != nil {
			return Decision{}, err
		}
	}
	return d, nil
}

func (d *Decision) set(k, v string) error {
	var err error
	switch k {
	case "cause":
		d.Cause = Cause(v)
	case "request":
		d.Request = v
	case "gpus":
		d.GPUs, err = strconv.Atoi(v)
	case "tasks":
		d.Tasks, err = strconv.Atoi(v)
	case "shape":
		d.Shape = v
	case "segment":
		d.Segment, err = strconv.Atoi(v)
	case "domain":
		d.Domain = v
	case "tier":
		d.Tier = v
	case "bound":
		d.Bound = strings.Split(v, ",")
	case "excluded":
		d.Excluded = v
	case "spares":
		d.Spares = strings.Split(v, ",")
	case "models":
		d.Models = strings.Split(v, ",")
	case "snapshot":
		d.Snapshot, err = strconv.ParseUint(v, 10, 64)
	case "hold":
		d.Hold = v
	default:
		return fmt.Errorf("unknown decision field %q", k)
	}
	if err != nil {
		return fmt.Errorf("decision field %s=%q: %w", k, v, err)
	}
	return nil
}
