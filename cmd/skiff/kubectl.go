package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/plugin"
	"k8s.io/kubectl/pkg/cmd/util"
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

// runKubectl runs kubectl with args and exits as kubectl does.
func runKubectl(args []string) {
	if os.Getenv("KUBECONFIG") == "" {
		if _, err := os.Stat(adminKubeconfig); err == nil {
			_ = os.Setenv("KUBECONFIG", adminKubeconfig)
		}
	}
	command := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
		PluginHandler: kubectlcmd.NewDefaultPluginHandler(plugin.ValidPluginFilenamePrefixes),
		Arguments:     append([]string{"kubectl"}, args...),
		ConfigFlags:   genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithDiscoveryBurst(300).WithDiscoveryQPS(50),
		IOStreams:     genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
	})
	command.SetArgs(args)
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}
