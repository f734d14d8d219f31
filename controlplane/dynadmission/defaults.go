// Package dynadmission is Kubernetes' dynamic admission control: admission
// configured through the API (admissionregistration.k8s.io/v1) rather than
// compiled in. It holds the defaults and validation of its objects —
// webhook configurations, ValidatingAdmissionPolicies, MutatingAdmission-
// Policies and their bindings — and builds the admission plugins that run
// them (k8s.io/apiserver's, made to be embedded), with what those need from
// the server: clients, caches, a REST mapper and a Service resolver.
package dynadmission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default sets the v1 API's defaults of obj, one of the package's kinds;
// other objects are left alone. It is idempotent.
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			defaultHook(hookOf(w))
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			defaultHook(hookOf(w))
			setDefault(&w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		setDefault(&o.Spec.FailurePolicy, admissionregistrationv1.Fail)
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		setDefault(&o.Spec.FailurePolicy, admissionregistrationv1.Fail)
		if o.Spec.ReinvocationPolicy == "" {
			o.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
		}
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	}
}

// defaultHook: failurePolicy Fail, matchPolicy Equivalent, selectors that
// select everything, a 10 s timeout, rules of any scope, Services on 443.
func defaultHook(h hook) {
	setDefault(h.failurePolicy, admissionregistrationv1.Fail)
	setDefault(h.matchPolicy, admissionregistrationv1.Equivalent)
	setDefault(h.namespaceSelector, metav1.LabelSelector{})
	setDefault(h.objectSelector, metav1.LabelSelector{})
	setDefault(h.timeoutSeconds, 10)
	for i := range h.rules {
		setDefault(&h.rules[i].Scope, admissionregistrationv1.AllScopes)
	}
	if s := h.clientConfig.Service; s != nil {
		setDefault(&s.Port, 443)
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	setDefault(&m.MatchPolicy, admissionregistrationv1.Equivalent)
	setDefault(&m.NamespaceSelector, metav1.LabelSelector{})
	setDefault(&m.ObjectSelector, metav1.LabelSelector{})
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			setDefault(&rules[i].Scope, admissionregistrationv1.AllScopes)
		}
	}
}

// setDefault points an unset optional field at a copy of v.
func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}

// hook is what validating and mutating webhooks share, by reference.
type hook struct {
	name              string
	clientConfig      *admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     **admissionregistrationv1.FailurePolicyType
	matchPolicy       **admissionregistrationv1.MatchPolicyType
	namespaceSelector **metav1.LabelSelector
	objectSelector    **metav1.LabelSelector
	sideEffects       *admissionregistrationv1.SideEffectClass
	timeoutSeconds    **int32
	reviewVersions    []string
	matchConditions   []admissionregistrationv1.MatchCondition
}

// hookOf gives the shared fields of a validating or mutating webhook.
func hookOf[W *admissionregistrationv1.ValidatingWebhook | *admissionregistrationv1.MutatingWebhook](w W) hook {
	switch w := any(w).(type) {
	case *admissionregistrationv1.ValidatingWebhook:
		return hook{w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector,
			&w.ObjectSelector, w.SideEffects, &w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
	case *admissionregistrationv1.MutatingWebhook:
		return hook{w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector,
			&w.ObjectSelector, w.SideEffects, &w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
	}
	panic("unreachable")
}
