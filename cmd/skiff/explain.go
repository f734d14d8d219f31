package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/skiff-lab/skiff/podtrace"
)

// explainCommand is `skiff explain pod NAME`: the pod's journey through
// the cluster, read from its pods/explain subresource with a kubeconfig
// as kubectl's (the admin kubeconfig when none is given and it exists).
func explainCommand() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	var output string
	var whyNot bool
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Show how a pod went through the cluster, step by step",
	}
	pod := &cobra.Command{
		Use:   "pod NAME",
		Short: "Print the pod's journey: each step, the component that took it, when, how long, and its result",
		Long: "Print the pod's journey through the cluster as the server recorded it: the API request, admission, " +
			"the etcd write, the scheduler's decision and binding, then each step on its node (network, sandbox, images, " +
			"init containers, containers, hooks) until it is Ready. --why-not says, for a pod no node takes, why each node refused it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := fetchExplanation(cmd, flags, args[0])
			if err != nil {
				return err
			}
			return printExplanation(cmd.OutOrStdout(), e, output, whyNot)
		},
	}
	pod.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a timeline)")
	pod.Flags().BoolVar(&whyNot, "why-not", false, "say why the scheduler's last attempt put the pod on no node, node by node")
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(pod)
	return cmd
}

func fetchExplanation(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, name string) (podtrace.Explanation, error) {
	var e podtrace.Explanation
	if *flags.KubeConfig == "" && os.Getenv("KUBECONFIG") == "" {
		if _, err := os.Stat(adminKubeconfig); err == nil {
			*flags.KubeConfig = adminKubeconfig
		}
	}
	rc, err := flags.ToRESTConfig()
	if err != nil {
		return e, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return e, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return e, err
	}
	raw, err := client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name(name).SubResource("explain").DoRaw(cmd.Context())
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("the server's explanation of pod %s: %w", name, err)
	}
	return e, nil
}

func printExplanation(w io.Writer, e podtrace.Explanation, output string, whyNot bool) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	case "yaml":
		data, err := yaml.Marshal(e)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "":
	default:
		return fmt.Errorf("--output: %q is neither json nor yaml", output)
	}
	if whyNot {
		return podtrace.WriteWhyNot(w, e)
	}
	if err := podtrace.WriteTimeline(w, e.Journey); err != nil || !e.Deleted {
		return err
	}
	_, err := fmt.Fprintln(w, "The pod is deleted: this is the journey the server kept.")
	return err
}
