package agent

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeHandler is the one runtime handler the agent runs pods with, under
// the name containerd's CRI gives its default runtime.
const runtimeHandler = "runc"

// checkRuntimeHandler refuses a pod whose RuntimeClass names a handler
// this node does not have, as a CRI runtime refuses the sandbox.
func (s *podSync) checkRuntimeHandler(ctx context.Context) error {
	name := s.pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return nil
	}
	rc, err := s.a.client.NodeV1().RuntimeClasses().Get(ctx, *name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get RuntimeClass %q: %w", *name, err)
	}
	if rc.Handler != runtimeHandler {
		return fmt.Errorf("no runtime for %q is configured (this node runs %q)", rc.Handler, runtimeHandler)
	}
	return nil
}
