package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// unbind lists, and with --clear takes out, what the job_submit plugin
// wrote into pending jobs: the matching OR of gt_<domain> features and the
// whole free nodes it added to ExcNodeList. Both are right while the cluster
// file they came from is in force; after the topology is rebuilt (domains
// renamed) or gangtopo is removed, a job bound to features no node carries
// pends forever (BadConstraints). A rewritten shape (-N 4
// --gpus-per-node=8) stays valid on any cluster and is left alone.
//
// The jobs are read one by one with `scontrol -o show job ID` for the IDs
// `squeue` lists: a job's own text (its name, its comment) can hold lines
// that read like another job's record, and reading all jobs in one listing
// would let a user's text decide what is changed in someone else's job.

type unbindOptions struct {
	clear    bool
	prefix   string
	slurmBin string
	config   string
	door     *actuate.Door // made for the first change (--clear)
	w        io.Writer
}

func newUnbindCmd() *cobra.Command {
	o := unbindOptions{}
	cmd := &cobra.Command{
		Use:   "unbind [JOBID...]",
		Short: "List pending jobs gangtopo bound to domains (gt_* features, excluded nodes); --clear takes the binding out",
		Long: `Unbind looks at pending jobs (the IDs given, or every pending job) and,
for each one whose gangtopo decision (in AdminComment, or Comment with
decision_field: comment) bound it, prints what gangtopo added: the matching OR
of node features over the domains (gt_leaf3|gt_leaf4...) and the nodes added
to ExcNodeList. With --clear it runs "scontrol update JobId=ID Features=...
ExcNodeList=..." to put back what the job had without gangtopo: the user's
own constraint and exclusions stay. Run it after rebuilding the topology with
renamed domains, or after removing gangtopo, so no job waits for features no
node carries. A rewritten shape (-N 4 --gpus-per-node=8) is valid anywhere and
is kept. Needs Slurm's clients ($SLURM_CONF); --clear needs an operator.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnbind(cmd.Context(), cmd.OutOrStdout(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.clear, "clear", false, "take the bindings out (scontrol update); without it, only list them")
	f.StringVar(&o.prefix, "feature-prefix", jobsubmit.DefaultFeaturePrefix, "gangtopo.yaml's feature_prefix")
	f.StringVar(&o.slurmBin, "slurm-bin", "", "`directory` holding squeue and scontrol (default: $PATH)")
	f.StringVar(&o.config, "config", "", "the plugin's gangtopo.yaml, whose actions.audit_log records each change --clear makes (default: $GANGTOPO_CONFIG, else "+ctld.DefaultConfigPath+")")
	return cmd
}

// binding is what gangtopo added to one pending job, and the job's fields
// without it.
type binding struct {
	job                        slurmJob
	features, excluded         string // as they are now
	newFeatures, newExcluded   string // without gangtopo's part
	changeFeatures, changeExcl bool
	note                       string // why a part is left as it is
}

func runUnbind(ctx context.Context, w io.Writer, ids []string, o unbindOptions) error {
	o.w = w
	if ctx == nil {
		ctx = context.Background()
	}
	if len(ids) == 0 {
		out, err := o.slurm(ctx, "squeue", "-h", "-t", "PENDING", "-o", "%i")
		if err != nil {
			return err
		}
		ids = strings.Fields(out)
	}
	found := 0
	for _, id := range ids {
		text, err := o.slurm(ctx, "scontrol", "-o", "show", "job", id)
		if err != nil {
			return err
		}
		j, err := parseSlurmJob(text, id)
		if err != nil {
			return err
		}
		b, ok := bindingOf(j, o.prefix)
		if !ok {
			continue
		}
		found++
		if err := o.report(ctx, w, b); err != nil {
			return err
		}
	}
	if found == 0 {
		fmt.Fprintln(w, "gangtopo: no pending job carries a gangtopo binding")
	}
	return nil
}

// bindingOf works out gangtopo's part of a pending job's features and
// exclusions from its decision; ok is false when there is none.
func bindingOf(j slurmJob, prefix string) (binding, bool) {
	if j.state != "PENDING" {
		return binding{}, false
	}
	d, err := jobsubmit.ParseDecision(j.adm)
	if err != nil {
		if d, err = jobsubmit.ParseDecision(j.comment); err != nil {
			return binding{}, false
		}
	}
	if len(d.Bound) == 0 && d.Excluded == "" {
		return binding{}, false
	}
	b := binding{job: j, features: j.features, excluded: j.excluded, newFeatures: j.features, newExcluded: j.excluded}
	if len(d.Bound) > 0 {
		expr := jobsubmit.BindingExpr(prefix, d.Bound)
		if user, ok := jobsubmit.UserFeatures(j.features, expr); ok {
			b.newFeatures, b.changeFeatures = user, true
		} else if strings.Contains(j.features, expr) {
			b.note = "its features were changed since gangtopo bound it; left as they are"
		}
	}
	if d.Excluded != "" && j.excluded != "" {
		b.newExcluded, b.changeExcl = jobsubmit.WithoutNodes(j.excluded, d.Excluded)
	}
	return b, b.changeFeatures || b.changeExcl || b.note != ""
}

func (o *unbindOptions) report(ctx context.Context, w io.Writer, b binding) error {
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	fmt.Fprintf(w, "job %s: %s\n", b.job.id, b.job.stateLine())
	var args []string
	if b.changeFeatures {
		fmt.Fprintf(w, "  Features:    %s -> %s\n", b.features, none(b.newFeatures))
		args = append(args, "Features="+b.newFeatures)
	}
	if b.changeExcl {
		fmt.Fprintf(w, "  ExcNodeList: %s -> %s\n", b.excluded, none(b.newExcluded))
		args = append(args, "ExcNodeList="+b.newExcluded)
	}
	if b.note != "" {
		fmt.Fprintf(w, "  note:        %s\n", b.note)
	}
	if !o.clear || len(args) == 0 {
		return nil
	}
	door, err := o.changes()
	if err != nil {
		return err
	}
	ch := actuate.Change{Entry: actuate.Entry{Action: "unbind", Job: b.job.id, Duty: "unbind", Reason: "gangtopo's binding taken out"},
		Cmd: "scontrol", Args: append([]string{"update", "JobId=" + b.job.id}, args...), Undo: true}
	if _, err := door.Do(ctx, ch); err != nil {
		return fmt.Errorf("unbind --clear: job %s: %w", b.job.id, err)
	}
	fmt.Fprintln(w, "  cleared")
	return nil
}

// changes is the door --clear changes jobs through, made on first use:
// gangtopo.yaml must load, for its audit log (each change is recorded
// before it is made).
func (o *unbindOptions) changes() (*actuate.Door, error) {
	if o.door != nil {
		return o.door, nil
	}
	path := o.config
	if path == "" {
		path = ctld.DefaultConfigPath
		if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
			path = env
		}
	}
	cfg, err := ctld.LoadConfig(path)
	if err != nil {
		return nil, usagef("unbind --clear records each change in gangtopo.yaml's actions.audit_log before it makes it: --config: %v", err)
	}
	o.door = commandDoor(cfg, o.slurmBin, "unbind --clear", o.w)
	return o.door, nil
}

// slurm runs a Slurm client command (each argument its own word: no
// shell) and returns its output.
func (o unbindOptions) slurm(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bin := name
	if o.slurmBin != "" {
		bin = filepath.Join(o.slurmBin, name)
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
