package dynadmission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/ptr"
)

// Validate checks obj, one of the package's kinds, by the rules of
// kube-apiserver's admissionregistration.k8s.io/v1 validation (its
// messages, its field paths); CEL expressions must compile. Other objects
// have no errors.
func Validate(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return validateHooks(len(o.Webhooks), func(i int) hook { return hookOf(&o.Webhooks[i]) })
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		errs := validateHooks(len(o.Webhooks), func(i int) hook { return hookOf(&o.Webhooks[i]) })
		for i, w := range o.Webhooks {
			if p := w.ReinvocationPolicy; p != nil {
				errs = append(errs, oneOf(*p, field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"),
					admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy)...)
			}
		}
		return errs
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return validateValidatingPolicy(&o.Spec, field.NewPath("spec"))
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return validateValidatingBinding(&o.Spec, field.NewPath("spec"))
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return validateMutatingPolicy(&o.Spec, field.NewPath("spec"))
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		spec, path := &o.Spec, field.NewPath("spec")
		return validateBinding(spec.PolicyName, spec.ParamRef, spec.MatchResources, path)
	}
	return nil
}

// validateHooks checks n webhooks and that their names are unique.
func validateHooks(n int, at func(int) hook) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range n {
		h, path := at(i), field.NewPath("webhooks").Index(i)
		if names[h.name] {
			errs = append(errs, field.Duplicate(path.Child("name"), h.name))
		}
		names[h.name] = true
		errs = append(errs, validateHook(h, path)...)
	}
	return errs
}

func validateHook(h hook, path *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(path.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRule(&h.rules[i], path.Child("rules").Index(i))...)
	}
	if p := *h.failurePolicy; p != nil {
		errs = append(errs, oneOf(*p, path.Child("failurePolicy"), admissionregistrationv1.Ignore, admissionregistrationv1.Fail)...)
	}
	if p := *h.matchPolicy; p != nil {
		errs = append(errs, oneOf(*p, path.Child("matchPolicy"), admissionregistrationv1.Exact, admissionregistrationv1.Equivalent)...)
	}
	errs = append(errs, validateSelector(*h.namespaceSelector, path.Child("namespaceSelector"))...)
	errs = append(errs, validateSelector(*h.objectSelector, path.Child("objectSelector"))...)
	if h.sideEffects == nil {
		errs = append(errs, field.Required(path.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	} else {
		errs = append(errs, oneOf(*h.sideEffects, path.Child("sideEffects"), admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun)...)
	}
	if t := *h.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateReviewVersions(h.reviewVersions, path.Child("admissionReviewVersions"))...)
	errs = append(errs, validateClientConfig(h.clientConfig, path.Child("clientConfig"))...)
	return append(errs, validateMatchConditions(h.matchConditions, false, path.Child("matchConditions"))...)
}

// reviewVersions are the AdmissionReview versions skiff's server sends.
var reviewVersions = []string{"v1", "v1beta1"}

func validateReviewVersions(versions []string, path *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(path, "must specify one of "+strings.Join(reviewVersions, ", "))}
	}
	var errs field.ErrorList
	known := false
	for i, v := range versions {
		if slices.Contains(versions[:i], v) {
			errs = append(errs, field.Invalid(path.Index(i), v, "duplicate version"))
		}
		if errs1 := utilvalidation.IsDNS1035Label(v); len(errs1) > 0 {
			errs = append(errs, field.Invalid(path.Index(i), v, strings.Join(errs1, ", ")))
		}
		known = known || slices.Contains(reviewVersions, v)
	}
	if !known {
		errs = append(errs, field.Invalid(path, versions, "must include at least one of "+strings.Join(reviewVersions, ", ")))
	}
	return errs
}

// validateClientConfig: a URL (https, a host, no user, query or fragment)
// or a Service (name, namespace, port, a path of segments), not both, by
// k8s.io/apiserver's rules.
func validateClientConfig(c *admissionregistrationv1.WebhookClientConfig, path *field.Path) field.ErrorList {
	switch {
	case (c.URL == nil) == (c.Service == nil):
		return field.ErrorList{field.Required(path, "exactly one of url or service is required")}
	case c.URL != nil:
		return webhook.ValidateWebhookURL(path.Child("url"), *c.URL, true)
	}
	s := c.Service
	return webhook.ValidateWebhookService(path.Child("service"), s.Namespace, s.Name, s.Path, ptr.Deref(s.Port, 443))
}

var operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create,
	admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect}

func validateRule(r *admissionregistrationv1.RuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case len(r.Operations) == 0:
		errs = append(errs, field.Required(path.Child("operations"), ""))
	case len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll):
		errs = append(errs, field.Invalid(path.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(operations, op) {
			errs = append(errs, field.NotSupported(path.Child("operations").Index(i), op, operations))
		}
	}
	errs = append(errs, validateNames(r.APIGroups, "API groups", path.Child("apiGroups"), true)...)
	errs = append(errs, validateNames(r.APIVersions, "API versions", path.Child("apiVersions"), false)...)
	errs = append(errs, validateResources(r.Resources, path.Child("resources"))...)
	if r.Scope != nil {
		errs = append(errs, oneOf(*r.Scope, path.Child("scope"), admissionregistrationv1.ClusterScope,
			admissionregistrationv1.NamespacedScope, admissionregistrationv1.AllScopes)...)
	}
	return errs
}

// validateNames checks a rule's list of groups or versions: required,
// '*' alone, and (but the core group "") no empty entry.
func validateNames(names []string, what string, path *field.Path, emptyOK bool) field.ErrorList {
	if len(names) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(names) > 1 && slices.Contains(names, "*") {
		errs = append(errs, field.Invalid(path, names, "if '*' is present, must not specify other "+what))
	}
	for i, n := range names {
		if n == "" && !emptyOK {
			errs = append(errs, field.Required(path.Index(i), ""))
		}
	}
	return errs
}

// validateResources: each "resource" or "resource/subresource", '*' and
// '*/*' not beside what they already cover.
func validateResources(resources []string, path *field.Path) field.ErrorList {
	if len(resources) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	hasAll, hasAllAll := slices.Contains(resources, "*"), slices.Contains(resources, "*/*")
	for i, r := range resources {
		res, sub, isSub := strings.Cut(r, "/")
		switch {
		case r == "":
			errs = append(errs, field.Required(path.Index(i), ""))
		case res == "" || (isSub && sub == ""):
			errs = append(errs, field.Invalid(path.Index(i), r, "must be a resource or resource/subresource"))
		case hasAllAll && r != "*/*":
			errs = append(errs, field.Invalid(path.Index(i), r, "if '*/*' is present, must not specify other resources"))
		case hasAll && !isSub && r != "*":
			errs = append(errs, field.Invalid(path.Index(i), r, "if '*' is present, must not specify other resources without subresources"))
		}
	}
	return errs
}

func validateSelector(s *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	return metavalidation.ValidateLabelSelector(s, metavalidation.LabelSelectorValidationOptions{}, path)
}

// validateMatchResources checks a policy's matchConstraints (rules
// required) or a binding's matchResources (rules optional).
func validateMatchResources(m *admissionregistrationv1.MatchResources, rulesRequired bool, path *field.Path) field.ErrorList {
	if m == nil {
		if rulesRequired {
			return field.ErrorList{field.Required(path, "")}
		}
		return nil
	}
	var errs field.ErrorList
	if rulesRequired && len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("resourceRules"), ""))
	}
	if m.MatchPolicy != nil {
		errs = append(errs, oneOf(*m.MatchPolicy, path.Child("matchPolicy"), admissionregistrationv1.Exact, admissionregistrationv1.Equivalent)...)
	}
	errs = append(errs, validateSelector(m.NamespaceSelector, path.Child("namespaceSelector"))...)
	errs = append(errs, validateSelector(m.ObjectSelector, path.Child("objectSelector"))...)
	for _, list := range []struct {
		rules []admissionregistrationv1.NamedRuleWithOperations
		name  string
	}{{m.ResourceRules, "resourceRules"}, {m.ExcludeResourceRules, "excludeResourceRules"}} {
		for i := range list.rules {
			r, rp := &list.rules[i], path.Child(list.name).Index(i)
			for j, name := range r.ResourceNames {
				for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
					errs = append(errs, field.Invalid(rp.Child("resourceNames").Index(j), name, msg))
				}
			}
			errs = append(errs, validateRule(&r.RuleWithOperations, rp)...)
		}
	}
	return errs
}

func validateParamKind(k *admissionregistrationv1.ParamKind, path *field.Path) field.ErrorList {
	if k == nil {
		return nil
	}
	var errs field.ErrorList
	if k.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), ""))
	} else if gv, err := schema.ParseGroupVersion(k.APIVersion); err != nil || gv.Version == "" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), k.APIVersion, "must be a group/version or a version"))
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	}
	return errs
}

func validateParamRef(r *admissionregistrationv1.ParamRef, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case r.Name != "" && r.Selector != nil:
		errs = append(errs, field.Forbidden(path.Child("name"), "name and selector are mutually exclusive"))
	case r.Name == "" && r.Selector == nil:
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	case r.Selector != nil:
		errs = append(errs, validateSelector(r.Selector, path.Child("selector"))...)
	}
	if r.ParameterNotFoundAction == nil {
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	} else {
		errs = append(errs, oneOf(*r.ParameterNotFoundAction, path.Child("parameterNotFoundAction"),
			admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction)...)
	}
	return errs
}

// validateBinding checks what both kinds of policy binding have.
func validateBinding(policy string, ref *admissionregistrationv1.ParamRef, match *admissionregistrationv1.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	errs = append(errs, validateParamRef(ref, path.Child("paramRef"))...)
	return append(errs, validateMatchResources(match, false, path.Child("matchResources"))...)
}

func validateValidatingBinding(spec *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec, path *field.Path) field.ErrorList {
	errs := validateBinding(spec.PolicyName, spec.ParamRef, spec.MatchResources, path)
	ap := path.Child("validationActions")
	if len(spec.ValidationActions) == 0 {
		return append(errs, field.Required(ap, ""))
	}
	for i, a := range spec.ValidationActions {
		if slices.Contains(spec.ValidationActions[:i], a) {
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		}
		errs = append(errs, oneOf(a, ap.Index(i), admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Audit)...)
	}
	if slices.Contains(spec.ValidationActions, admissionregistrationv1.Deny) && slices.Contains(spec.ValidationActions, admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(ap, spec.ValidationActions,
			"must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

// oneOf: v is one of allowed.
func oneOf[T ~string](v T, path *field.Path, allowed ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, fmt.Sprintf("must be one of %q", allowed))}
	}
	if !slices.Contains(allowed, v) {
		return field.ErrorList{field.NotSupported(path, v, allowed)}
	}
	return nil
}
