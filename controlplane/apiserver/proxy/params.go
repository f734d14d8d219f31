package proxy

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
)

// The query parameters of the nodes' APIs.

// StreamParams are the node API's query for exec or attach: its names for
// the streams, and the command.
func StreamParams(subresource string, q url.Values, opts streamproxy.Options) (url.Values, error) {
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	params := url.Values{}
	for name, on := range map[string]bool{"input": opts.Stdin, "output": opts.Stdout, "error": opts.Stderr, "tty": opts.Tty} {
		if on {
			params.Set(name, "1")
		}
	}
	if subresource == "exec" {
		if len(q["command"]) == 0 {
			return nil, apierrors.NewBadRequest("you must specify at least one command for the container")
		}
		params["command"] = q["command"]
	}
	return params, nil
}

// PodContainer resolves the container a request names: the pod's only
// container when none is named.
func PodContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
	}
	if registry.ContainerNamed(&pod.Spec, name) {
		return name, nil
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// logParams are PodLogOptions' query parameters the node API takes.
var logParams = []string{"container", "follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

// ParseLogOptions checks a pods/log query as PodLogOptions' validation
// does and keeps the parameters the node takes.
func ParseLogOptions(q url.Values) (url.Values, error) {
	out := url.Values{}
	for _, name := range logParams {
		if v := q.Get(name); v != "" {
			out.Set(name, v)
		}
	}
	var errs field.ErrorList
	for _, p := range []struct {
		name string
		min  int64
	}{{"tailLines", 0}, {"sinceSeconds", 1}, {"limitBytes", 1}} {
		if v := out.Get(p.name); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < p.min {
				errs = append(errs, field.Invalid(field.NewPath(p.name), v, fmt.Sprintf("must be an integer of at least %d", p.min)))
			}
		}
	}
	if v := out.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("sinceTime"), v, "must be an RFC 3339 time"))
		}
		if out.Get("sinceSeconds") != "" {
			errs = append(errs, field.Forbidden(field.NewPath("sinceSeconds"), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, "", errs)
	}
	return out, nil
}
