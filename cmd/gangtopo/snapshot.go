package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

type snapshotOpts struct {
	fromSlurm   bool
	topology    string
	output      string
	strict      bool
	insecureDir bool
	slurm       slurmFlags
	now         func() time.Time
	stderr      io.Writer
	stdout      io.Writer
}

func newSnapshotCmd() *cobra.Command {
	o := &snapshotOpts{now: time.Now}
	cmd := &cobra.Command{
		Use:   "snapshot --from-slurm --topology cluster.yaml -o snapshot.json",
		Short: "Write an occupancy snapshot of the cluster from Slurm's state",
		Long: `Reads the state of a running Slurm cluster, 22.05 to 26.05 (sinfo --json on
22.05, scontrol --json show nodes on 23.02 and later, squeue --json; or
scontrol -a -d show node/job; SLURM_CONF selects the cluster as usual), or
their saved outputs (--sinfo-json, --squeue-json, ...: these need no
--from-slurm), and publishes an occupancy snapshot of the topology's nodes:
written to a temporary file in the same directory, synced and renamed into
place, with a generation higher than the file it replaces.

Nodes Slurm has that the topology lacks, and the reverse, are reported as
warnings (with --strict they fail the command).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stderr, o.stdout = cmd.ErrOrStderr(), cmd.OutOrStdout()
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.fromSlurm, "from-slurm", false, "read the state from Slurm's commands (saved outputs of them imply it)")
	f.StringVar(&o.topology, "topology", "", "cluster `file` (YAML, version v1)")
	f.StringVarP(&o.output, "output", "o", "", "snapshot `file` to publish, or - for standard output")
	f.BoolVar(&o.strict, "strict", false, "fail (exit 2) when Slurm's nodes or GPU counts differ from the topology's")
	f.BoolVar(&o.insecureDir, "allow-insecure-dir", false, "publish even into a directory others can write")
	o.slurm.register(f)
	return cmd
}

func (o *snapshotOpts) run(ctx context.Context) error {
	if !o.fromSlurm && !o.slurm.saved() {
		return usagef("snapshot: say where the state comes from: --from-slurm (Slurm's commands), or their saved outputs (--sinfo-json and --squeue-json)")
	}
	if o.topology == "" || o.output == "" {
		return usagef("snapshot: --topology and -o are required")
	}
	cfg, err := o.slurm.config()
	if err != nil {
		return err
	}
	c, err := loadCluster(o.topology)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	at := o.now()
	st, _, err := slurmstate.Poll(ctx, cfg)
	var pe *slurmstate.PollError
	if errors.As(err, &pe) && pe.Input {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	s, rep, err := slurmstate.BuildSnapshot(c, st, at, o.slurm.featurePrefix)
	if err != nil {
		return err
	}
	for _, line := range rep.Lines() {
		fmt.Fprintf(o.stderr, "gangtopo: warning: %s\n", line)
	}
	if o.strict && rep.TopologyMismatch() {
		return usagef("snapshot: Slurm and topology %s disagree on nodes or GPU counts (see the warnings); nothing written", o.topology)
	}
	return o.publish(s, st.Describe(cfg))
}

func (o *snapshotOpts) publish(s *occupancy.Snapshot, src string) error {
	if o.output == "-" {
		s.Generation = publish.NextGeneration(0, s.Time)
		return s.Encode(o.stdout, src)
	}
	prev, err := publish.ReadHeader(o.output)
	if err != nil {
		fmt.Fprintf(o.stderr, "gangtopo: warning: previous snapshot unreadable (%v); replacing it\n", err)
	}
	s.Generation = publish.NextGeneration(prev.Generation, s.Time)
	err = publish.WriteSnapshot(o.output, s, src, publish.Options{AllowInsecureDir: o.insecureDir})
	var de *publish.DirError
	if errors.As(err, &de) {
		return usagef("%v; --allow-insecure-dir publishes anyway", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.stderr, "gangtopo: snapshot: wrote %s (generation %d, %s)\n", o.output, s.Generation, snapshotSummary(s))
	return nil
}

// snapshotSummary counts nodes by state and the jobs: "16 nodes: 14 idle, 2 mixed; jobs: 1".
func snapshotSummary(s *occupancy.Snapshot) string {
	var counts [8]int
	for _, st := range s.State {
		counts[st]++
	}
	var parts []string
	for st, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, occupancy.NodeState(st)))
		}
	}
	return fmt.Sprintf("%d nodes: %s; jobs: %d", len(s.State), strings.Join(parts, ", "), len(s.Jobs))
}
