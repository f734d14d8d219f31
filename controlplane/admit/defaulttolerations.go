package admit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
)

// defaultTolerationSeconds is how long a pod stays, by default, on a node
// that became not ready or unreachable (kube-apiserver's
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds).
const defaultTolerationSeconds int64 = 300

// DefaultTolerationSeconds gives a pod, as kube-apiserver's plugin of
// that name, NoExecute tolerations of 300 s for the not-ready and
// unreachable taints, unless it already tolerates them: when it is made,
// and again when an update would drop them (an update may only add
// tolerations).
type DefaultTolerationSeconds struct{ *admission.Handler }

// NewDefaultTolerationSeconds returns the plugin.
func NewDefaultTolerationSeconds() *DefaultTolerationSeconds {
	return &DefaultTolerationSeconds{admission.NewHandler(admission.Create, admission.Update)}
}

// Admit adds the tolerations the pod lacks.
func (p *DefaultTolerationSeconds) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := newPod(a)
	if !ok {
		return nil
	}
	for _, key := range []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || (t.Key == "" && t.Operator == v1.TolerationOpExists)) &&
				(t.Effect == "" || t.Effect == v1.TaintEffectNoExecute) {
				tolerated = true
			}
		}
		if !tolerated {
			seconds := defaultTolerationSeconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists,
				Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
	return nil
}
