// Command skiff is the one binary of a skiff cluster: `skiff server` runs
// the control plane with a node agent, `skiff agent` a node agent alone,
// `skiff kubectl` (or this binary run as kubectl) is kubectl, `skiff
// install` and `skiff uninstall` make it a systemd service and take it
// away, `skiff check-config` checks the machine, and `skiff version` says
// which skiff this is.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skiff-lab/skiff/logging"
)

func main() {
	if isKubectl(os.Args[0]) {
		runKubectl(os.Args[1:])
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := rootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// rootCommand is skiff's command tree; cobra adds `completion` (bash,
// zsh, fish, powershell) and `help`.
func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "skiff",
		Short:         "A compact Kubernetes for Linux nodes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var logs logging.Options
	pf := root.PersistentFlags()
	pf.TextVar(&logs.Level, "log-level", slog.LevelInfo, "least severe log lines written: DEBUG, INFO, WARN or ERROR")
	pf.StringVar(&logs.Format, "log-format", logging.FormatText, "log line format: text or json (one stream for skiff, the Kubernetes libraries, etcd and containerd's client)")
	pf.IntVarP(&logs.V, "v", "v", 0, "verbosity of the Kubernetes libraries' log lines (klog's -v); 4 and above also writes DEBUG lines")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.DisableFlagParsing {
			return nil // kubectl, crictl, ctr: their own flags and logs
		}
		if err := applyConfig(cmd, os.Getenv); err != nil {
			return err
		}
		if err := applyPassthroughs(cmd); err != nil {
			return err
		}
		return logging.Setup(os.Stderr, logs)
	}
	server, agent := serverCommand(), agentCommand()
	addConfigFlag(server)
	addConfigFlag(agent)
	addPassthroughFlags(server, "kubelet-arg", "kube-proxy-arg", "kube-apiserver-arg", "kube-controller-manager-arg", "kube-scheduler-arg")
	addPassthroughFlags(agent, "kubelet-arg", "kube-proxy-arg")
	root.AddCommand(server, agent, tokenCommand(), etcdCommand(), versionCommand(), kubectlCommand(),
		installCommand(), uninstallCommand(), checkConfigCommand(), crictlCommand(), ctrCommand(), explainCommand())
	return root
}
