package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// version is set at link time: -ldflags "-X main.version=..."
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gangtopo's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "gangtopo", version)
			return nil
		},
	}
}
