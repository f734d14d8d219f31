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
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

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
			ready := func(ctx context.Context) error { return serverInstalled(ctx, cmd.Flags()) }
			if role == install.Agent {
				ready = func(ctx context.Context) error { return agentInstalled(ctx, cmd.Flags()) }
			}
			return install.ThisMachine().Install(ctx, role, self, settings, ready)
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

// serverInstalled tells what to do next once the server answers (systemd
// started it: it sent READY=1).
func serverInstalled(ctx context.Context, fs *pflag.FlagSet) error {
	kubeconfig, _ := fs.GetString("write-kubeconfig")
	dataDir, _ := fs.GetString("data-dir")
	token := filepath.Join(dataDir, "server", "token")
	fmt.Printf("skiff server is up.\n  kubectl:    skiff kubectl get nodes   (or kubectl, with KUBECONFIG=%s)\n", kubeconfig)
	join := "https://<this server>:6443"
	if url, err := advertisedURL(ctx, kubeconfig); err == nil {
		join = url
	}
	fmt.Printf("  join token: %s\n  add a node: skiff install agent --server %s --token $(cat %s)   (the token's content, on the new node)\n", token, join, token)
	return nil
}

// advertisedURL is the API server's URL as the cluster knows it: the
// default/kubernetes Endpoints.
func advertisedURL(ctx context.Context, kubeconfig string) (string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	ep, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
		return "", fmt.Errorf("no address in default/kubernetes: %v", err)
	}
	s := ep.Subsets[0]
	return fmt.Sprintf("https://%s:%d", s.Addresses[0].IP, s.Ports[0].Port), nil
}

// agentInstalled waits, with the agent's credentials, until its Node is
// Ready.
func agentInstalled(ctx context.Context, fs *pflag.FlagSet) error {
	kubeconfig, _ := fs.GetString("kubeconfig")
	name, _ := fs.GetString("node-name")
	fmt.Printf("waiting for node %s to be Ready\n", name)
	var last string
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		node, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				last = fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
				return c.Status == v1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready (%s): %w; see journalctl -u skiff-agent.service", name, last, err)
	}
	fmt.Printf("node %s is Ready.\n", name)
	return nil
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
			cfg := node.cfg
			cfg.DataDir = node.dataDir
			teardown := func(ctx context.Context) error {
				err := agent.Teardown(ctx, cfg, func(what string) { fmt.Println("removing", what) })
				return errors.Join(err, cleanupNode(ctx, node))
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
	for key, value := range file {
		if fs.Lookup(key) == nil {
			continue
		}
		text, err := flagValue(value)
		if err == nil {
			err = fs.Set(key, text)
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: %s: %w", path, key, err)
		}
	}
	return node, nil
}
