// Package envvars computes a container's environment as the kubelet does:
// service link variables, envFrom ConfigMaps and Secrets, then env entries
// with $(VAR) expansion and valueFrom sources (Downward API via package
// downward, ConfigMap and Secret keys). It also expands $(VAR) in command
// and args.
//
// The computation is pure apart from reading API objects through Sources,
// an interface the caller implements.
package envvars

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/downward"
)

// Input is what For needs besides the pod, the container and the objects.
type Input struct {
	// IPs are the pod's and the node's IPs, for status.podIP(s) and
	// status.hostIP(s); nil lists fall back to the pod's status.
	IPs downward.IPs
	// NodeAllocatable is the node's allocatable resources, the default
	// for a resourceFieldRef limit the container does not set.
	NodeAllocatable v1.ResourceList
}

// Result is a container's environment.
type Result struct {
	// Env is KEY=VALUE, each name once: service link variables first
	// (services sorted by name), then each envFrom source in order (its
	// keys sorted), then container.Env in order. A name set again replaces
	// the earlier entry and takes the later place, so the entries from
	// container.Env end the list in their declared order.
	Env []string
	// Skipped lists, per envFrom source, the keys left out because they are
	// not valid variable names; the caller may emit one warning event each
	// (ReasonInvalidNames, SkippedKeys.Message), as the kubelet does.
	Skipped []SkippedKeys
}

// For computes the environment of container c of pod, reading the objects
// it refers to (in pod.Namespace) and the services through src; c need not
// be one of pod's containers, but resourceFieldRefs without a container
// name look c.Name up in pod.
//
// A value is expanded against the variables set before it: service link
// variables, envFrom keys and earlier env entries. An env entry whose
// optional ConfigMap, Secret or key is missing is left out.
//
// Every error means the container cannot be configured now (the kubelet's
// CreateContainerConfigError): a *MissingError (errors.Is(err, ErrMissing))
// for a missing required ConfigMap, Secret or key, other errors for an
// unsupported field or resource, or a Sources failure (wrapped).
//
// For keeps nothing between calls and does not modify its arguments;
// concurrent calls are safe when src is.
func For(ctx context.Context, src Sources, pod *v1.Pod, c *v1.Container, in Input) (Result, error) {
	b := &builder{
		pod: pod, container: c, in: in, vars: newVars(),
		objects: &objects{src: src, namespace: pod.Namespace, data: map[objectRef]map[string]string{}},
	}
	services, err := serviceVars(ctx, src, pod)
	if err != nil {
		return Result{}, err
	}
	for _, s := range services {
		b.vars.set(s.name, s.value)
	}
	for _, from := range c.EnvFrom {
		if err := b.addEnvFrom(ctx, from); err != nil {
			return Result{}, err
		}
	}
	for _, e := range c.Env {
		value, ok, err := b.value(ctx, e)
		if err != nil {
			return Result{}, err
		}
		if ok {
			b.vars.set(e.Name, value)
		}
	}
	return Result{Env: b.vars.strings(), Skipped: b.skipped}, nil
}

// builder holds one For call's state.
type builder struct {
	pod       *v1.Pod
	container *v1.Container
	in        Input
	objects   *objects
	vars      *vars
	skipped   []SkippedKeys
}
