package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/picture"
	"github.com/gangtopo/gangtopo/selector/frag"
)

type fragOptions struct {
	topology, state, output string
	noColor, noPicture      bool
	width                   int
	pending                 bool
	svg                     string
	live                    defragLive
}

func newFragCmd() *cobra.Command {
	o := fragOptions{}
	cmd := &cobra.Command{
		Use:   "frag --topology cluster.yaml [--state snapshot.json]",
		Short: "Report GPU fragmentation: FGD amount and rate, free blocks per tier, gangs that could start now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFrag(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "topology", "", "cluster file (YAML, version v1)")
	f.StringVar(&o.state, "state", "", "occupancy snapshot (JSON, version v1); empty cluster if omitted")
	f.StringVarP(&o.output, "output", "o", "table", outputHelp("table", "json"))
	f.BoolVar(&o.noColor, "no-color", false, "no ANSI colours in the cluster picture (default when not a terminal or NO_COLOR is set)")
	f.BoolVar(&o.noPicture, "no-picture", false, "omit the cluster picture")
	f.IntVar(&o.width, "width", 0, "picture width in columns (default: $COLUMNS or 100)")
	f.StringVar(&o.svg, "svg", "", "also draw the cluster picture as SVG into this `file`: the GPUs of every node, grouped by leaf and NVLink block")
	f.BoolVar(&o.pending, "pending", false, "list the pending gangs a defragmentation plan could start, and what it costs (reads Slurm: sinfo and squeue --json, or their saved outputs; the cluster as Slurm has it replaces --state)")
	o.live.register(f, false, configForFrag)
	return cmd
}

func runFrag(w io.Writer, o fragOptions) error {
	if err := checkOutput(o.output, "table", "json"); err != nil {
		return err
	}
	if o.width < 0 || o.width > 0 && o.width < minPictureWidth {
		return usagef("--width %d: want at least %d columns (0: $COLUMNS, else 100)", o.width, minPictureWidth)
	}
	if err := checkWritable("--svg", o.svg); err != nil {
		return err
	}
	if o.pending {
		return runFragPending(w, o)
	}
	c, s, err := loadState(o.topology, o.state)
	if err != nil {
		return err
	}
	wl := frag.PhillyPrior(1)
	r := frag.NewMeter(c, &wl).BuildReport(s)
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeFragTable(w, &r)
	view := picture.FromCluster(c, s)
	if !o.noPicture {
		fmt.Fprintln(w)
		view.WriteText(w, picture.TextOptions{Color: useColor(w, o.noColor), Width: pictureWidth(o.width)})
	}
	return writeFile(o.svg, view.WriteSVG)
}

func writeFragTable(w io.Writer, r *frag.Report) {
	gpus := func(milli float64) string { return fmt.Sprintf("%.1f", milli/1000) }
	fmt.Fprintf(w, "cluster %s (generation %d): %d GPUs\n", r.Cluster, r.Generation, r.TotalGPUs)
	fmt.Fprintf(w, "  allocated            %8s GPUs\n", gpus(float64(r.AllocatedMilli)))
	fmt.Fprintf(w, "  idle (schedulable)   %8s GPUs\n", gpus(float64(r.IdleMilli)))
	fmt.Fprintf(w, "  offline (drain/down) %8s GPUs\n", gpus(float64(r.OfflineMilli)))
	fmt.Fprintf(w, "  FGD fragmentation    %8s GPUs  (%.1f%% of idle)\n", gpus(r.FragMilli), r.FragRate)
	fmt.Fprintf(w, "  gang fragmentation   %8s GPUs  (idle GPUs typical multi-node gangs cannot use)\n", gpus(r.GangMilli))
	fmt.Fprintf(w, "  stranded             %8s GPUs  (free, but no typical job shape fits where they are)\n", gpus(r.StrandedMilli))
	fmt.Fprintln(w, "\nlargest free block per tier (whole free GPUs):")
	for _, b := range r.Largest {
		fmt.Fprintf(w, "  %-8s %4d  %s\n", b.Tier, b.GPUs, b.Domain)
	}
	fmt.Fprintln(w, "\ngangs that could start now (each inside one node, or one leaf when larger):")
	var header, any []string
	for _, st := range r.Startable {
		if st.Model == "" {
			header = append(header, fmt.Sprintf("%6d", st.GPUs))
			any = append(any, fmt.Sprintf("%6d", st.Count))
		}
	}
	fmt.Fprintf(w, "  %-10s %s\n", "GPUs", strings.Join(header, ""))
	fmt.Fprintf(w, "  %-10s %s\n", "any model", strings.Join(any, ""))
	row := map[string][]string{}
	var models []string
	for _, st := range r.Startable {
		if st.Model != "" {
			if _, ok := row[st.Model]; !ok {
				models = append(models, st.Model)
			}
			row[st.Model] = append(row[st.Model], fmt.Sprintf("%6d", st.Count))
		}
	}
	for _, m := range models {
		fmt.Fprintf(w, "  %-10s %s\n", m, strings.Join(row[m], ""))
	}
	fmt.Fprintln(w, "\nleaves:")
	for _, l := range r.Leaves {
		fmt.Fprintf(w, "  %-12s %3d nodes  %3d whole free  %4d/%d GPUs free\n", l.Name, l.Nodes, l.WholeFreeNodes, l.FreeGPUs, l.TotalGPUs)
	}
	if len(r.Degraded) > 0 {
		fmt.Fprintln(w, "\ndegraded domains (failed members: down, drained or not reported; they hold gangs only as large as what is healthy):")
		for _, d := range r.Degraded {
			fmt.Fprintf(w, "  %-6s %-12s %d of %d nodes healthy  (failed: %s)\n", d.Tier, d.Domain+":", d.Healthy, d.Nodes, d.Failed)
		}
	}
}

// useColor decides on ANSI colours: never with --no-color or NO_COLOR, and
// only when writing to a terminal.
func useColor(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// minPictureWidth is the narrowest picture a node's name and GPUs fit.
const minPictureWidth = 20

func pictureWidth(flag int) int {
	if flag > 0 {
		return flag
	}
	var cols int
	if _, err := fmt.Sscan(os.Getenv("COLUMNS"), &cols); err == nil && cols >= minPictureWidth {
		return cols
	}
	return 100
}

// runFragPending reports on the cluster as Slurm has it, with the pending
// gangs a defragmentation plan could start.
func runFragPending(w io.Writer, o fragOptions) error {
	if o.state != "" {
		return usagef("frag: --pending reads the cluster from Slurm; drop --state")
	}
	l := &o.live
	l.topology = o.topology
	if err := l.load(false); err != nil {
		return err
	}
	v, err := l.observe(context.Background())
	if err != nil {
		return err
	}
	p, err := l.planner()
	if err != nil {
		return err
	}
	if o.output == "json" {
		return usagef("frag: --pending prints a table; -o json is for the report alone")
	}
	r := frag.NewMeter(l.cluster, ptr(frag.PhillyPrior(1))).BuildReport(v.Snapshot)
	writeFragTable(w, &r)
	fmt.Fprintln(w, "\npending gangs, and what a defragmentation plan would cost (gangtopo defrag apply --job ID carries one out):")
	l.writePendingPlans(w, v, p, "")
	return nil
}

func ptr[T any](v T) *T { return &v }
