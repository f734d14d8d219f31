package registry

import (
	"github.com/skiff-lab/skiff/controlplane/dynadmission"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AdmissionRegistrationResources are the objects of dynamic admission
// control (admissionregistration.k8s.io/v1): webhook configurations and
// admission policies with their bindings, which the admission plugins
// of package dynadmission read from the server's caches.
func AdmissionRegistrationResources() []*Resource {
	gv := admissionregistrationv1.SchemeGroupVersion
	st := admissionConfigStrategy{}
	return []*Resource{
		{GVK: gv.WithKind("ValidatingWebhookConfiguration"), Plural: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			Strategy:   webhookConfigStrategy{st}},
		{GVK: gv.WithKind("MutatingWebhookConfiguration"), Plural: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			Strategy:   webhookConfigStrategy{st}},
		{GVK: gv.WithKind("ValidatingAdmissionPolicy"), Plural: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
			Strategy:   st, Subresources: []string{"status"}},
		{GVK: gv.WithKind("ValidatingAdmissionPolicyBinding"), Plural: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
			Strategy:   st},
		{GVK: gv.WithKind("MutatingAdmissionPolicy"), Plural: "mutatingadmissionpolicies", Singular: "mutatingadmissionpolicy",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
			Strategy:   st},
		{GVK: gv.WithKind("MutatingAdmissionPolicyBinding"), Plural: "mutatingadmissionpolicybindings", Singular: "mutatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
			NewObj:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
			NewList:    func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
			Strategy:   st},
	}
}

// admissionConfigStrategy defaults and validates by package dynadmission;
// a new policy's status is the status controller's to write.
type admissionConfigStrategy struct{ BaseStrategy }

func (admissionConfigStrategy) PrepareForCreate(obj runtime.Object) {
	if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
		p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	}
	dynadmission.Default(obj)
}

func (admissionConfigStrategy) PrepareForUpdate(obj, _ runtime.Object) { dynadmission.Default(obj) }

func (admissionConfigStrategy) Validate(obj runtime.Object) field.ErrorList {
	return dynadmission.Validate(obj)
}

// webhookConfigStrategy: a configuration's generation counts changes of
// its webhooks, and its table shows how many it has.
type webhookConfigStrategy struct{ admissionConfigStrategy }

func (webhookConfigStrategy) specChanged(obj, old runtime.Object) bool {
	return !EqualField(obj, old, "Webhooks")
}

func (webhookConfigStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Webhooks", "integer", "The number of webhooks."), ageColumn}
}

func (webhookConfigStrategy) Row(obj runtime.Object) []any {
	var n int
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		n = len(c.Webhooks)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		n = len(c.Webhooks)
	}
	m := ObjectMeta(obj)
	return []any{m.Name, int64(n), age(m.CreationTimestamp)}
}
