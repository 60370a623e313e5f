package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/controller"
)

// wake asks the controller for a cycle now over its wake socket (the
// controller's wake.go says what a wake may do). Its place is slurm.conf's
// EpilogSlurmctld, which Slurm runs when a job ends and whose return it
// waits for before it finishes a requeue: a gang requeued after a node
// failure is then re-bound before Slurm may start it. As a hook it never
// fails the job's end: whatever happens it exits 0 (--strict: 1 when the
// controller did not run the cycle), and it waits --timeout at most.

type wakeOptions struct {
	socket  string
	job     string
	timeout time.Duration
	strict  bool
}

// DefaultWakeSocket is where the controller's --wake-socket and gangtopo
// wake meet unless told otherwise (docs/admin.md).
const DefaultWakeSocket = "/run/gangtopo/controller.sock"

func newWakeCmd() *cobra.Command {
	o := wakeOptions{}
	cmd := &cobra.Command{
		Use:   "wake",
		Short: "Ask the controller for a cycle now and wait for it (slurm.conf EpilogSlurmctld)",
		Long: `Wake asks the gangtopo controller (daemon --role controller --wake-socket) for
a cycle now and waits until its duties have run on a poll taken after the
wake. Run from slurm.conf's EpilogSlurmctld, it lets the controller re-bind a
gang requeued after a node failure before Slurm may start it again: Slurm
finishes a requeue only when EpilogSlurmctld has returned, and under an
expedited requeue (Slurm 25.11+) the gang could otherwise start at once with
the binding it ran with. The job is SLURM_JOB_ID (EpilogSlurmctld sets it):
the controller runs a cycle only for a job that ran with a gangtopo decision,
since every job's end runs the hook. Without a job it asks for a cycle
whatever ran.

It prints the controller's answer on stderr and exits 0 whatever it is (a
hook must not fail the job's end), unless --strict. It waits --timeout at
most: that long at most Slurm's requeue waits for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("job") {
				o.job = os.Getenv("SLURM_JOB_ID")
			}
			return runWake(o, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.socket, "socket", DefaultWakeSocket, "the controller's wake `socket` (its --wake-socket)")
	f.StringVar(&o.job, "job", "", "the job that ended (default: $SLURM_JOB_ID; empty: a cycle whatever ran)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "wait this long at most for the controller's answer")
	f.BoolVar(&o.strict, "strict", false, "exit 1 when the controller did not run the cycle (by hand; never in EpilogSlurmctld)")
	return cmd
}

// runWake sends the wake and reports the answer on w.
func runWake(o wakeOptions, w io.Writer) error {
	if o.job != "" && !controller.WakeJobID(o.job) {
		return usagef("--job %q: want a Slurm job ID (digits)", o.job)
	}
	if o.timeout <= 0 {
		return usagef("--timeout %s: want a duration above 0", o.timeout)
	}
	answer, err := controller.AskWake(o.socket, o.job, o.timeout)
	if err != nil {
		if o.strict {
			return err
		}
		fmt.Fprintf(w, "gangtopo wake: %v\n", err)
		return nil
	}
	fmt.Fprintf(w, "gangtopo wake: %s\n", answer)
	if o.strict && !strings.HasPrefix(answer, "ok") {
		return fmt.Errorf("the controller answered %q", answer)
	}
	return nil
}
