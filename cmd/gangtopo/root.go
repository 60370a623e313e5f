package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// newRootCmd assembles the command tree. Each subcommand lives in its own
// file as newXxxCmd.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "gangtopo",
		Short:         "Topology-aware, defragmenting GPU gang placement for Slurm",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetVersionTemplate("gangtopo {{.Version}}\n") // as `gangtopo version` prints it
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	root.AddCommand(
		newVersionCmd(),
		newFragCmd(),
		newPlaceCmd(),
		newDefragCmd(),
		newSimulateCmd(),
		newDiscoverCmd(),
		newTopologyCmd(),
		newGenCmd(),
		newSnapshotCmd(),
		newDaemonCmd(),
		newReplayCmd(),
		newWhyCmd(),
		newUnbindCmd(),
		newQuotaCmd(),
		newWakeCmd(),
	)
	return root
}

// needSubcommand is the body of a command that only groups others (gen,
// topology): without arguments it prints its help, and an unknown
// subcommand is bad input (exit 2), not a help page and success.
func needSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usagef("unknown command %q for %q (want one of %s)", args[0], cmd.CommandPath(), strings.Join(names, ", "))
}
