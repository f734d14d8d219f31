package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/skiff-lab/skiff/podtrace"
)

// explainCommand is `skiff explain pod|deployment|job|statefulset|daemonset
// NAME`: pods' journeys through the cluster, read from their pods/explain
// subresource, and `skiff explain service NAME`; with a kubeconfig as
// kubectl's (the admin kubeconfig when none is given and it exists).
func explainCommand() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	var output string
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Show how pods went through the cluster, step by step",
	}
	flags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: text)")
	cmd.AddCommand(explainPodCommand(flags, &output))
	for _, k := range workloadKinds {
		cmd.AddCommand(explainWorkloadCommand(flags, &output, k))
	}
	cmd.AddCommand(explainServiceCommand(flags, &output))
	return cmd
}

func explainServiceCommand(flags *genericclioptions.ConfigFlags, output *string) *cobra.Command {
	return &cobra.Command{
		Use:     "service NAME",
		Aliases: []string{"svc", "services"},
		Short:   "Print the Service's endpoints, whether each node's proxy has synced its last change, and each node's DNS answer",
		Long: "Print the Service's endpoints (ready or not, on which node) as its EndpointSlices hold them, then, for each node, " +
			"whether its proxy's rules are made from the current EndpointSlices, how many ready endpoints they hold, and what " +
			"its cluster DNS server answers for the Service's name. The nodes are asked through the API server's nodes/proxy.",
		Args: cobra.ExactArgs(1),
		RunE: explainWith(flags, func(ctx context.Context, c *explainer, w io.Writer, name string) error {
			e, err := c.explainService(ctx, name)
			if err != nil {
				return err
			}
			if *output != "" {
				return printAs(w, e, *output)
			}
			return writeService(w, e, time.Now())
		}),
	}
}

func explainPodCommand(flags *genericclioptions.ConfigFlags, output *string) *cobra.Command {
	var whyNot bool
	pod := &cobra.Command{
		Use:   "pod NAME",
		Short: "Print the pod's journey: each step, the component that took it, when, how long, and its result",
		Long: "Print the pod's journey through the cluster as the server recorded it: the API request, admission, " +
			"the etcd write, the scheduler's decision and binding, then each step on its node (network, sandbox, images, " +
			"init containers, containers, hooks) until it is Ready. --why-not says, for a pod no node takes, why each node refused it.",
		Args: cobra.ExactArgs(1),
		RunE: explainWith(flags, func(ctx context.Context, c *explainer, w io.Writer, name string) error {
			e, err := c.explain(ctx, name)
			if err != nil {
				return err
			}
			return printExplanation(w, e, *output, whyNot)
		}),
	}
	pod.Flags().BoolVar(&whyNot, "why-not", false, "say why the scheduler's last attempt put the pod on no node, node by node")
	return pod
}

func explainWorkloadCommand(flags *genericclioptions.ConfigFlags, output *string, k workloadKind) *cobra.Command {
	return &cobra.Command{
		Use:     k.name + " NAME",
		Aliases: k.aliases,
		Short:   "Print where each pod of the " + k.title + " stands, and what holds the slowest back",
		Args:    cobra.ExactArgs(1),
		RunE: explainWith(flags, func(ctx context.Context, c *explainer, w io.Writer, name string) error {
			wl, err := c.explainWorkload(ctx, k, name)
			if err != nil {
				return err
			}
			if *output != "" {
				return printAs(w, wl, *output)
			}
			return podtrace.WriteWorkload(w, wl, time.Now())
		}),
	}
}

// explainWith is a subcommand's RunE: fn with an explainer made from
// flags, the command's output and its one argument, the name.
func explainWith(flags *genericclioptions.ConfigFlags, fn func(context.Context, *explainer, io.Writer, string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := newExplainer(flags)
		if err != nil {
			return err
		}
		return fn(cmd.Context(), c, cmd.OutOrStdout(), args[0])
	}
}

// explainer reads explanations from the server, in one namespace.
type explainer struct {
	client    kubernetes.Interface
	namespace string
}

func newExplainer(flags *genericclioptions.ConfigFlags) (*explainer, error) {
	if *flags.KubeConfig == "" && os.Getenv("KUBECONFIG") == "" {
		if _, err := os.Stat(adminKubeconfig); err == nil {
			*flags.KubeConfig = adminKubeconfig
		}
	}
	rc, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &explainer{client: client, namespace: ns}, nil
}

// explain is the pod's pods/explain.
func (c *explainer) explain(ctx context.Context, name string) (podtrace.Explanation, error) {
	var e podtrace.Explanation
	raw, err := c.client.CoreV1().RESTClient().Get().Namespace(c.namespace).Resource("pods").Name(name).SubResource("explain").DoRaw(ctx)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("the server's explanation of pod %s: %w", name, err)
	}
	return e, nil
}

// explainWorkload explains each pod of the workload of kind k.
func (c *explainer) explainWorkload(ctx context.Context, k workloadKind, name string) (podtrace.Workload, error) {
	wl := podtrace.Workload{Kind: k.title, Namespace: c.namespace, Name: name, Pods: []podtrace.Explanation{}}
	status, pods, err := workloadPods(ctx, c.client, k, c.namespace, name)
	if err != nil {
		return wl, err
	}
	wl.Status = status
	for _, p := range pods {
		e, err := c.explain(ctx, p.Name)
		if apierrors.IsNotFound(err) {
			continue // gone since the list
		}
		if err != nil {
			return wl, err
		}
		wl.Pods = append(wl.Pods, e)
	}
	return wl, nil
}

func printExplanation(w io.Writer, e podtrace.Explanation, output string, whyNot bool) error {
	if output != "" {
		return printAs(w, e, output)
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

// printAs prints v as JSON or YAML.
func printAs(w io.Writer, v any, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("--output: %q is neither json nor yaml", output)
}
