package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// objectInterfaces are what admission plugins may ask of the scheme.
var objectInterfaces = admission.NewObjectInterfacesFromScheme(Scheme)

// admit runs the admission chain (Config.Admission) on a write: its
// mutating plugins may change obj, then its validating plugins may refuse
// it. obj is the new object (nil for a delete), old the stored one (nil
// for a create); a refusal is the plugin's error, a Kubernetes Status.
func (s *Server) admit(ctx context.Context, op admission.Operation, req request, obj, old runtime.Object, dryRun bool) error {
	chain := s.cfg.Admission
	if chain == nil {
		return nil
	}
	u, _ := UserFrom(ctx)
	name := req.name
	if name == "" && obj != nil {
		name = objectMeta(obj).Name
	}
	attrs := admission.NewAttributesRecord(obj, old, req.res.gvk, req.namespace, name,
		req.res.gvk.GroupVersion().WithResource(req.res.plural), req.subresource, op, nil, dryRun, u)
	if m, ok := chain.(admission.MutationInterface); ok && m.Handles(op) {
		if err := m.Admit(ctx, attrs, objectInterfaces); err != nil {
			return err
		}
	}
	if v, ok := chain.(admission.ValidationInterface); ok && v.Handles(op) {
		return v.Validate(ctx, attrs, objectInterfaces)
	}
	return nil
}
