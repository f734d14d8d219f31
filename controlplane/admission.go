package controlplane

import (
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/admit"
)

// admissionChain is the API server's admission plugins, in
// kube-apiserver's order.
func admissionChain() admission.Interface {
	return admission.NewChainHandler(admit.NewNodeRestriction())
}
