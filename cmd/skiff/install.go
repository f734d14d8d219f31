package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skiff-lab/skiff/agent"
	"github.com/skiff-lab/skiff/install"
)

func installCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install skiff as a systemd service (as root): skiff install server | skiff install agent --server URL --token TOKEN",
	}
	cmd.AddCommand(installRole(install.Server, serverCommand()), installRole(install.Agent, agentCommand()))
	return cmd
}

// installRole is `skiff install <role>`: it takes every flag of `skiff
// <role>`, writes those given to the config file and installs the unit.
func installRole(role string, run *cobra.Command) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   role + " [flags of skiff " + role + "]",
		Short: fmt.Sprintf("Install and start skiff-%s.service with these flags of `skiff %s` as %s", role, role, defaultConfigPath),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			settings := givenSettings(cmd.Flags(), "timeout", "log-level")
			if role == install.Agent && (settings["server"] == nil || settings["token"] == nil) {
				return errors.New("install agent needs --server (the server's URL) and --token (its <data-dir>/server/token)")
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			m := install.ThisMachine()
			return m.Install(ctx, role, self, settings, installed(m, role, cmd.Flags()))
		},
	}
	cmd.Flags().AddFlagSet(run.Flags())
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the service to come up")
	return cmd
}

// givenSettings are the flags given on the command line, but those
// named, as config file values: lists as lists, maps as maps.
func givenSettings(fs *pflag.FlagSet, except ...string) map[string]any {
	out := map[string]any{}
	fs.Visit(func(f *pflag.Flag) {
		for _, e := range except {
			if f.Name == e {
				return
			}
		}
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			out[f.Name] = v.GetSlice()
		default:
			if m, err := fs.GetStringToString(f.Name); err == nil {
				out[f.Name] = m
			} else {
				out[f.Name] = v.String()
			}
		}
	})
	return out
}

// installed is what `skiff install <role>` waits for once the service
// started, told where to look by the role's flags in fs.
func installed(m install.Machine, role string, fs *pflag.FlagSet) func(context.Context) error {
	if role == install.Agent {
		kubeconfig, _ := fs.GetString("kubeconfig")
		name, _ := fs.GetString("node-name")
		return func(ctx context.Context) error { return m.AgentInstalled(ctx, kubeconfig, name) }
	}
	kubeconfig, _ := fs.GetString("write-kubeconfig")
	dataDir, _ := fs.GetString("data-dir")
	return func(ctx context.Context) error { return m.ServerInstalled(ctx, kubeconfig, dataDir) }
}

// runDir holds a node's sockets and network namespaces by default.
const runDir = "/run/skiff"

func uninstallCommand() *cobra.Command {
	var purge bool
	var config string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove skiff's services, its pods, containers, network and binary (as root); --purge also its data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			node, err := installedNode(config)
			if err != nil {
				return err
			}
			// A cluster DNS address it cannot tell is reported; the rest
			// is removed all the same.
			cfg, dnsErr := node.teardownConfig()
			teardown := func(ctx context.Context) error {
				err := agent.Teardown(ctx, cfg, func(what string) { fmt.Println("removing", what) })
				return errors.Join(err, dnsErr, agent.Cleanup(ctx, cfg))
			}
			state := []string{node.dataDir, filepath.Dir(defaultConfigPath), config, cfg.PodLogDir, cfg.NetNSDir, runDir}
			if err := install.ThisMachine().Uninstall(cmd.Context(), teardown, purge, state); err != nil {
				return err
			}
			fmt.Println("skiff is uninstalled.")
			return nil
		},
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also remove the data dir (the cluster's state), /etc/skiff, the pod logs and /run/skiff")
	cmd.Flags().StringVar(&config, "config", defaultConfigPath, "the installed config file, for where the node keeps things")
	return cmd
}

// installedNode reads the node's settings from the config file of an
// installed server or agent: the keys of the agent's flags, the others
// ignored.
func installedNode(path string) (*agentFlags, error) {
	node := &agentFlags{}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	fs.StringVar(&node.dataDir, "data-dir", "/var/lib/skiff", "")
	fs.StringVar(&node.cfg.ServiceCIDR, "service-cidr", "10.96.0.0/16", "")
	node.register(fs)
	file, err := readConfig(path, false)
	if err != nil {
		return nil, err
	}
	for key, value := range file.values {
		if fs.Lookup(key) == nil {
			continue
		}
		text, err := flagValue(value)
		if err == nil {
			err = fs.Set(key, text)
		}
		if err != nil {
			return nil, file.errorf(key, "%s: %v", key, err)
		}
	}
	return node, nil
}
