package main

import (
	"path/filepath"

	"github.com/spf13/cobra"
)

// adminKubeconfig is where `skiff server` writes the admin kubeconfig by
// default, which `skiff kubectl` uses when KUBECONFIG is unset.
const adminKubeconfig = "/etc/skiff/admin.kubeconfig"

// kubectlCommand is `skiff kubectl`: the real kubectl, k8s.io/kubectl's
// command, in this binary (as `k3s kubectl`).
func kubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl",
		Short:              "Run kubectl, with the admin kubeconfig unless KUBECONFIG is set",
		DisableFlagParsing: true,
		Run:                func(_ *cobra.Command, args []string) { runKubectl(args) },
	}
}

// isKubectl says whether this binary was run as kubectl (a symlink).
func isKubectl(argv0 string) bool { return filepath.Base(argv0) == "kubectl" }
