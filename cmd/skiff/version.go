package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skiff-lab/skiff/version"
)

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print skiff's version, build and the Kubernetes version it serves",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			b := version.Current()
			fmt.Fprintf(cmd.OutOrStdout(), "skiff %s (Kubernetes API %s)\ngit commit: %s\nbuild date: %s\ngo: %s\nplatform: %s\n",
				b.Version, version.Kubernetes, orUnknown(b.GitCommit), orUnknown(b.BuildDate), b.GoVersion, b.Platform)
		},
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
