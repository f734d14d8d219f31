package dynadmission

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The CEL checks of the policies' and webhooks' expressions: each must
// compile in the environment the admission plugins evaluate it in (with
// params when the policy has a paramKind, the authorizer, the policy's
// variables), with strict cost limits — what kube-apiserver checks when
// such an object is written. A compile error is the field's error, the
// compiler's message ("compilation failed: ...") kept.

var (
	statelessOnce sync.Once
	stateless     plugincel.Compiler
)

// conditionCompiler compiles expressions that may not use variables
// (match conditions).
func conditionCompiler() plugincel.Compiler {
	statelessOnce.Do(func() {
		stateless = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	return stateless
}

// policyCompiler compiles a policy's expressions, each after its variables.
func policyCompiler() (*plugincel.CompositedCompiler, error) {
	return plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
}

func compile(c plugincel.Compiler, e plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, path *field.Path) field.ErrorList {
	return celError(c.CompileCELExpression(e, decls, environment.NewExpressions).Error, e.GetExpression(), path)
}

// celError turns a compile error into the field's error.
func celError(err *apiservercel.Error, expr string, path *field.Path) field.ErrorList {
	if err == nil {
		return nil
	}
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.ErrorList{field.Required(path, err.Detail)}
	case apiservercel.ErrorTypeInvalid:
		return field.ErrorList{field.Invalid(path, expr, err.Detail)}
	}
	return field.ErrorList{field.InternalError(path, err)}
}

func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, hasParams bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > 64 {
		errs = append(errs, field.TooMany(path, len(conds), 64))
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	for i, c := range conds {
		cp := path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
			if slices.ContainsFunc(conds[:i], func(o admissionregistrationv1.MatchCondition) bool { return o.Name == c.Name }) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
		}
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		} else {
			errs = append(errs, compile(conditionCompiler(), &matchconditions.MatchCondition{Expression: expr}, decls, cp.Child("expression"))...)
		}
	}
	return errs
}

// validatePolicyCommon checks what both kinds of policy have and compiles
// their variables into c, for the expressions after them.
func validatePolicyCommon(c *plugincel.CompositedCompiler, kind *admissionregistrationv1.ParamKind, match *admissionregistrationv1.MatchResources,
	fp *admissionregistrationv1.FailurePolicyType, conds []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable, path *field.Path) field.ErrorList {
	errs := validateParamKind(kind, path.Child("paramKind"))
	errs = append(errs, validateMatchResources(match, true, path.Child("matchConstraints"))...)
	if fp != nil {
		errs = append(errs, oneOf(*fp, path.Child("failurePolicy"), admissionregistrationv1.Ignore, admissionregistrationv1.Fail)...)
	}
	errs = append(errs, validateMatchConditions(conds, kind != nil, path.Child("matchConditions"))...)
	decls := plugincel.OptionalVariableDeclarations{HasParams: kind != nil, HasAuthorizer: true}
	for i, v := range vars {
		vp := path.Child("variables").Index(i)
		if !celIdentifier.MatchString(v.Name) || celReserved[v.Name] {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
			continue
		}
		res := c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, decls, environment.NewExpressions)
		errs = append(errs, celError(res.Error, v.Expression, vp.Child("expression"))...)
	}
	return errs
}

var celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

var celReserved = map[string]bool{"true": true, "false": true, "null": true, "in": true, "as": true, "break": true,
	"const": true, "continue": true, "else": true, "for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true, "var": true, "void": true, "while": true}

var validationReasons = []string{"Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"}

func validateValidatingPolicy(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec, path *field.Path) field.ErrorList {
	c, err := policyCompiler()
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	errs := validatePolicyCommon(c, spec.ParamKind, spec.MatchConstraints, spec.FailurePolicy, spec.MatchConditions, spec.Variables, path)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(path.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: spec.ParamKind != nil, HasAuthorizer: true}
	for i, v := range spec.Validations {
		vp := path.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		} else {
			errs = append(errs, compile(c, &validating.ValidationCondition{Expression: v.Expression}, decls, vp.Child("expression"))...)
		}
		if v.MessageExpression != "" {
			msgDecls := plugincel.OptionalVariableDeclarations{HasParams: spec.ParamKind != nil}
			errs = append(errs, compile(c, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, msgDecls, vp.Child("messageExpression"))...)
		}
		if strings.ContainsAny(strings.TrimSpace(v.Message), "\r\n") {
			errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "must not contain line breaks"))
		}
		if v.Reason != nil && !slices.Contains(validationReasons, string(*v.Reason)) {
			errs = append(errs, field.NotSupported(vp.Child("reason"), *v.Reason, validationReasons))
		}
	}
	for i, a := range spec.AuditAnnotations {
		ap := path.Child("auditAnnotations").Index(i)
		if a.Key == "" {
			errs = append(errs, field.Required(ap.Child("key"), ""))
		} else if slices.ContainsFunc(spec.AuditAnnotations[:i], func(o admissionregistrationv1.AuditAnnotation) bool { return o.Key == a.Key }) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		if a.ValueExpression == "" {
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		} else {
			errs = append(errs, compile(c, &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, decls, ap.Child("valueExpression"))...)
		}
	}
	return errs
}

func validateMutatingPolicy(spec *admissionregistrationv1.MutatingAdmissionPolicySpec, path *field.Path) field.ErrorList {
	c, err := policyCompiler()
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	errs := validatePolicyCommon(c, spec.ParamKind, spec.MatchConstraints, spec.FailurePolicy, spec.MatchConditions, spec.Variables, path)
	errs = append(errs, oneOf(spec.ReinvocationPolicy, path.Child("reinvocationPolicy"),
		admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy)...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(path.Child("mutations"), "mutations must contain at least one item"))
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: spec.ParamKind != nil, HasAuthorizer: true, HasPatchTypes: true}
	for i, m := range spec.Mutations {
		mp := path.Child("mutations").Index(i)
		var accessor plugincel.ExpressionAccessor
		var ep *field.Path
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if ep = mp.Child("applyConfiguration"); m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(ep, fmt.Sprintf("must be specified when patchType is %s", m.PatchType)))
				continue
			}
			accessor, ep = &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, ep.Child("expression")
		case admissionregistrationv1.PatchTypeJSONPatch:
			if ep = mp.Child("jsonPatch"); m.JSONPatch == nil {
				errs = append(errs, field.Required(ep, fmt.Sprintf("must be specified when patchType is %s", m.PatchType)))
				continue
			}
			accessor, ep = &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, ep.Child("expression")
		default:
			errs = append(errs, oneOf(m.PatchType, mp.Child("patchType"), admissionregistrationv1.PatchTypeApplyConfiguration, admissionregistrationv1.PatchTypeJSONPatch)...)
			continue
		}
		if strings.TrimSpace(accessor.GetExpression()) == "" {
			errs = append(errs, field.Required(ep, "expression is not specified"))
			continue
		}
		errs = append(errs, compile(c, accessor, decls, ep)...)
	}
	return errs
}
