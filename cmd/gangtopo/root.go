package main

import (
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
	}
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
	)
	return root
}
