package apiserver

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-lab/skiff/controlplane/dynadmission"
)

// admissionRegistrationResources are the objects of dynamic admission
// control (admissionregistration.k8s.io/v1): webhook configurations and
// admission policies with their bindings, which the admission plugins
// of package dynadmission read from the server's caches.
func admissionRegistrationResources() []*resource {
	gv := admissionregistrationv1.SchemeGroupVersion
	st := admissionConfigStrategy{}
	return []*resource{
		{gvk: gv.WithKind("ValidatingWebhookConfiguration"), plural: "validatingwebhookconfigurations", singular: "validatingwebhookconfiguration",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			strategy:   webhookConfigStrategy{st}},
		{gvk: gv.WithKind("MutatingWebhookConfiguration"), plural: "mutatingwebhookconfigurations", singular: "mutatingwebhookconfiguration",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			strategy:   webhookConfigStrategy{st}},
		{gvk: gv.WithKind("ValidatingAdmissionPolicy"), plural: "validatingadmissionpolicies", singular: "validatingadmissionpolicy",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
			strategy:   st, subresources: []string{"status"}},
		{gvk: gv.WithKind("ValidatingAdmissionPolicyBinding"), plural: "validatingadmissionpolicybindings", singular: "validatingadmissionpolicybinding",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
			strategy:   st},
		{gvk: gv.WithKind("MutatingAdmissionPolicy"), plural: "mutatingadmissionpolicies", singular: "mutatingadmissionpolicy",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
			strategy:   st},
		{gvk: gv.WithKind("MutatingAdmissionPolicyBinding"), plural: "mutatingadmissionpolicybindings", singular: "mutatingadmissionpolicybinding",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
			strategy:   st},
	}
}

// admissionConfigStrategy defaults and validates by package dynadmission;
// a new policy's status is the status controller's to write.
type admissionConfigStrategy struct{ baseStrategy }

func (admissionConfigStrategy) prepareForCreate(obj runtime.Object) {
	if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
		p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	}
	dynadmission.Default(obj)
}

func (admissionConfigStrategy) prepareForUpdate(obj, _ runtime.Object) { dynadmission.Default(obj) }

func (admissionConfigStrategy) validate(obj runtime.Object) field.ErrorList {
	return dynadmission.Validate(obj)
}

// webhookConfigStrategy: a configuration's generation counts changes of
// its webhooks, and its table shows how many it has.
type webhookConfigStrategy struct{ admissionConfigStrategy }

func (webhookConfigStrategy) specChanged(obj, old runtime.Object) bool {
	return !equalField(obj, old, "Webhooks")
}

func (webhookConfigStrategy) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Webhooks", "integer", "The number of webhooks."), ageColumn}
}

func (webhookConfigStrategy) row(obj runtime.Object) []any {
	var n int
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		n = len(c.Webhooks)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		n = len(c.Webhooks)
	}
	m := objectMeta(obj)
	return []any{m.Name, int64(n), age(m.CreationTimestamp)}
}
