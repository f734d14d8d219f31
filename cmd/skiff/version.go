package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skiff-lab/skiff/version"
)

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print skiff's version and the Kubernetes version it serves",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "skiff %s (Kubernetes API %s)\n", version.Version, version.Kubernetes)
		},
	}
}
