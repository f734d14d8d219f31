package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/host"
)

func checkConfigCommand() *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "check-config",
		Short: "Check that this machine can run a skiff server or agent: kernel, modules, cgroups, iptables, overlayfs, containerd, runc, CNI plugins, free ports",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ports := host.AgentPorts
			switch role {
			case "server":
				ports = append(host.ServerPorts, host.AgentPorts...)
			case "agent":
			default:
				return fmt.Errorf("--role: %q is not server or agent", role)
			}
			failed := 0
			for _, r := range host.RunChecks(host.System, host.Checks(cni.DefaultPluginDirs, ports)) {
				if r.Fix != nil {
					failed++
					fmt.Fprintf(cmd.OutOrStdout(), "FAIL  %-32s %s\n      fix: %v\n", r.Name, r.Found, r.Fix)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "pass  %-32s %s\n", r.Name, r.Found)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d check(s) failed", failed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "server", `what this machine is to run: "server" (its ports too) or "agent"`)
	return cmd
}
