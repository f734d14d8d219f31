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
	var level slog.Level
	root.PersistentFlags().TextVar(&level, "log-level", slog.LevelInfo, "least severe log lines written: DEBUG, INFO, WARN or ERROR")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		err := applyConfig(cmd, os.Getenv)
		slog.SetLogLoggerLevel(level)
		return err
	}
	server, agent := serverCommand(), agentCommand()
	addConfigFlag(server)
	addConfigFlag(agent)
	root.AddCommand(server, agent, tokenCommand(), etcdCommand(), versionCommand(), kubectlCommand(),
		installCommand(), uninstallCommand(), checkConfigCommand(), crictlCommand(), ctrCommand())
	return root
}
