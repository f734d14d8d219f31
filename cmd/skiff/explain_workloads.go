package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// workloadKind is a kind of controller `skiff explain` follows to its
// pods.
type workloadKind struct {
	name    string // the subcommand
	aliases []string
	title   string // the kind
	// owner reads the named object: the selector of its pods, the UIDs
	// of the controllers of those pods, and its status in words.
	owner func(ctx context.Context, c kubernetes.Interface, ns, name string) (owner, error)
}

type owner struct {
	selector    *metav1.LabelSelector
	controllers []types.UID
	status      string
}

var workloadKinds = []workloadKind{
	{name: "deployment", aliases: []string{"deploy", "deployments"}, title: "Deployment", owner: deploymentOwner},
	{name: "statefulset", aliases: []string{"sts", "statefulsets"}, title: "StatefulSet", owner: statefulSetOwner},
	{name: "daemonset", aliases: []string{"ds", "daemonsets"}, title: "DaemonSet", owner: daemonSetOwner},
	{name: "job", aliases: []string{"jobs"}, title: "Job", owner: jobOwner},
}

// workloadPods returns the workload's status in words and the pods it
// controls (a Deployment: through its ReplicaSets), by name.
func workloadPods(ctx context.Context, c kubernetes.Interface, k workloadKind, ns, name string) (string, []corev1.Pod, error) {
	o, err := k.owner(ctx, c, ns, name)
	if err != nil {
		return "", nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(o.selector)
	if err != nil {
		return "", nil, fmt.Errorf("%s %s/%s: %w", k.title, ns, name, err)
	}
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return "", nil, err
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		ref := metav1.GetControllerOf(&p)
		return ref == nil || !slices.Contains(o.controllers, ref.UID)
	})
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return o.status, pods, nil
}

func deploymentOwner(ctx context.Context, c kubernetes.Interface, ns, name string) (owner, error) {
	d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return owner{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return owner{}, fmt.Errorf("Deployment %s/%s: %w", ns, name, err)
	}
	sets, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return owner{}, err
	}
	var controllers []types.UID
	for i := range sets.Items {
		if metav1.IsControlledBy(&sets.Items[i], d) {
			controllers = append(controllers, sets.Items[i].UID)
		}
	}
	status := fmt.Sprintf("%d of %d ready, %d up to date", d.Status.ReadyReplicas, replicas(d.Spec.Replicas), d.Status.UpdatedReplicas)
	return owner{d.Spec.Selector, controllers, status}, nil
}

func statefulSetOwner(ctx context.Context, c kubernetes.Interface, ns, name string) (owner, error) {
	s, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return owner{}, err
	}
	status := fmt.Sprintf("%d of %d ready", s.Status.ReadyReplicas, replicas(s.Spec.Replicas))
	return owner{s.Spec.Selector, []types.UID{s.UID}, status}, nil
}

func daemonSetOwner(ctx context.Context, c kubernetes.Interface, ns, name string) (owner, error) {
	d, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return owner{}, err
	}
	status := fmt.Sprintf("%d of %d ready", d.Status.NumberReady, d.Status.DesiredNumberScheduled)
	return owner{d.Spec.Selector, []types.UID{d.UID}, status}, nil
}

func jobOwner(ctx context.Context, c kubernetes.Interface, ns, name string) (owner, error) {
	j, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return owner{}, err
	}
	status := fmt.Sprintf("%d active, %d succeeded, %d failed", j.Status.Active, j.Status.Succeeded, j.Status.Failed)
	if j.Spec.Completions != nil {
		status += fmt.Sprintf(" (of %d completions)", *j.Spec.Completions)
	}
	return owner{j.Spec.Selector, []types.UID{j.UID}, status}, nil
}

// replicas is a replicas field's value, 1 when unset (the default).
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
