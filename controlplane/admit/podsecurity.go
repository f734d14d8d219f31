package admit

import (
	"context"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	psadmission "k8s.io/pod-security-admission/admission"
	"k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// PodSecurity enforces the Pod Security Standards (privileged, baseline,
// restricted) a namespace's pod-security.kubernetes.io/enforce label
// asks for, and warns (the response's Warning headers) of what its warn
// label's level would refuse, with k8s.io/pod-security-admission's checks
// and messages: a pod that violates the enforced level is refused; a
// namespace relabelled stricter warns of its pods that would be; workloads
// get warnings only.
type PodSecurity struct {
	*admission.Handler
	delegate *psadmission.Admission
}

// NewPodSecurity returns the plugin with the default configuration
// (everything privileged unless a namespace says otherwise), reading
// namespaces and pods through namespaces and pods.
func NewPodSecurity(namespaces psadmission.NamespaceGetter, pods psadmission.PodLister) (*PodSecurity, error) {
	cfg, err := load.LoadFromData(nil)
	if err != nil {
		return nil, err
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	a := &psadmission.Admission{Configuration: cfg, Evaluator: evaluator, Metrics: noMetrics{},
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{}, NamespaceGetter: namespaces, PodLister: pods}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, err
	}
	return &PodSecurity{Handler: admission.NewHandler(admission.Create, admission.Update), delegate: a}, nil
}

// Validate refuses what the namespace's enforced level does not allow.
func (p *PodSecurity) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if gr != podsResource && gr != namespacesResource && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	result := p.delegate.Validate(ctx, &psapi.AttributesRecord{
		Name: a.GetName(), Namespace: a.GetNamespace(), Kind: a.GetKind(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Operation: admissionv1.Operation(a.GetOperation()),
		Object: a.GetObject(), OldObject: a.GetOldObject(), Username: a.GetUserInfo().GetName(),
	})
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if result.Allowed {
		return nil
	}
	refused := admission.NewForbidden(a, errors.New("Not allowed by PodSecurity")).(*apierrors.StatusError)
	if r := result.Result; r != nil {
		if r.Message != "" {
			refused.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			refused.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			refused.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			refused.ErrStatus.Code = r.Code
		}
	}
	return refused
}

// noMetrics drops the library's evaluation metrics.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(metrics.Decision, psapi.LevelVersion, metrics.Mode, psapi.Attributes) {
}
func (noMetrics) RecordExemption(psapi.Attributes)   {}
func (noMetrics) RecordError(bool, psapi.Attributes) {}
