package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

// slurmFlags are the flags that say how to read Slurm's state, shared by
// `gangtopo snapshot --from-slurm` and `gangtopo daemon --role controller`.
type slurmFlags struct {
	nodesFrom, jobsFrom string
	binDir              string
	timeout             time.Duration
	featurePrefix       string
	files               [5]string // saved outputs, by slurmstate.Source
	fs                  *pflag.FlagSet
}

var savedOutputFlags = [5]string{"sinfo-json", "squeue-json", "scontrol-nodes", "scontrol-jobs", "scontrol-nodes-json"}

func (f *slurmFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.nodesFrom, "nodes-from", "auto", "where nodes come from: auto (sinfo --json on Slurm 22.05, scontrol --json show nodes on 23.02 and later), sinfo (sinfo --json, 22.05), scontrol-json (scontrol -a --json show nodes, 23.02+) or scontrol (scontrol -a -d -o show node, any)")
	fs.StringVar(&f.jobsFrom, "jobs-from", "squeue", "where jobs come from: squeue (squeue --json) or scontrol (scontrol -a -d show job)")
	fs.StringVar(&f.binDir, "slurm-bin", "", "`directory` holding sinfo, squeue and scontrol (default: $PATH); they use $SLURM_CONF as usual")
	fs.DurationVar(&f.timeout, "slurm-timeout", 15*time.Second, "kill a Slurm command that has not finished within this `time`")
	fs.StringVar(&f.featurePrefix, "feature-prefix", jobsubmit.DefaultFeaturePrefix, "the plugin's feature_prefix: nodes whose features with it differ from the cluster file are reported (empty: no check)")
	for _, src := range slurmstate.Sources() {
		fs.StringVar(&f.files[src], savedOutputFlags[src], "", fmt.Sprintf("read `file`, saved output of %s, instead of running it", src))
	}
}

// saved reports whether any saved output of Slurm's commands was given.
func (f *slurmFlags) saved() bool {
	for _, name := range f.files {
		if name != "" {
			return true
		}
	}
	return false
}

// config checks the flags and makes the poll configuration.
func (f *slurmFlags) config() (*slurmstate.PollConfig, error) {
	cfg := &slurmstate.PollConfig{BinDir: f.binDir, Timeout: f.timeout, Files: map[slurmstate.Source]string{}}
	// A saved output implies reading that source, unless the source was
	// chosen explicitly.
	if !f.fs.Changed("nodes-from") {
		for src, name := range map[slurmstate.Source]string{slurmstate.ScontrolNodes: "scontrol",
			slurmstate.ScontrolNodesJSON: "scontrol-json", slurmstate.SinfoJSON: "sinfo"} {
			if f.files[src] != "" {
				f.nodesFrom = name
			}
		}
	}
	if f.files[slurmstate.ScontrolJobs] != "" && !f.fs.Changed("jobs-from") {
		f.jobsFrom = "scontrol"
	}
	var err error
	switch f.nodesFrom {
	case "auto":
		cfg.NodesFrom, cfg.NodesAuto = slurmstate.SinfoJSON, true
	case "sinfo":
		cfg.NodesFrom = slurmstate.SinfoJSON
	case "scontrol-json":
		cfg.NodesFrom = slurmstate.ScontrolNodesJSON
	case "scontrol":
		cfg.NodesFrom = slurmstate.ScontrolNodes
	default:
		return nil, usagef("--nodes-from: unknown source %q (want auto, sinfo, scontrol-json or scontrol)", f.nodesFrom)
	}
	if cfg.JobsFrom, err = pick("--jobs-from", f.jobsFrom, "squeue", slurmstate.SqueueJSON, "scontrol", slurmstate.ScontrolJobs); err != nil {
		return nil, err
	}
	for _, src := range slurmstate.Sources() {
		if f.files[src] == "" {
			continue
		}
		cfg.Files[src] = f.files[src]
		switch {
		case src.IsNodeSource():
			if src != cfg.NodesFrom {
				return nil, usagef("--%s: nodes come from %s (--nodes-from); give the saved output of that, or change --nodes-from", savedOutputFlags[src], cfg.NodesFrom)
			}
		default:
			if src != cfg.JobsFrom {
				return nil, usagef("--%s: jobs come from %s (--jobs-from); give the saved output of that, or change --jobs-from", savedOutputFlags[src], cfg.JobsFrom)
			}
		}
	}
	if f.timeout <= 0 {
		return nil, usagef("--slurm-timeout must be positive, not %s", f.timeout)
	}
	return cfg, nil
}

func pick(flag, v, a string, sa slurmstate.Source, b string, sb slurmstate.Source) (slurmstate.Source, error) {
	switch v {
	case a:
		return sa, nil
	case b:
		return sb, nil
	}
	return 0, usagef("%s: unknown source %q (want %s or %s)", flag, v, a, b)
}
