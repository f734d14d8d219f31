package registry

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/jobindexes"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Jobs (batch/v1) are kube-apiserver's: the API defaults them, gives each
// a selector of its own UID (unless spec.manualSelector) and labels its
// template to match, and checks what its controller relies on.

const (
	maxPodFailurePolicyRules       = 20
	maxPodFailurePolicyExitCodes   = 255
	maxPodFailurePolicyConditions  = 20
	maxParallelismForIndexedJob    = 100000
	maxFailedIndexesForIndexedJob  = 100000
	maxSuccessPolicyRules          = 20
	cronJobMaxNameLength           = 52
	legacyJobNameLabel             = "job-name"
	legacyControllerUIDLabel       = "controller-uid"
	podFailurePolicyRestartMessage = "only %q is supported when podFailurePolicy is specified"
)

type jobStrategy struct{ BaseStrategy }

var (
	_ Identifier = jobStrategy{}
	_ Orphaner   = jobStrategy{}
)

// OrphanWarning is kube-apiserver's warning on deleting a Job without a
// propagationPolicy.
func (jobStrategy) OrphanWarning() string {
	return "child pods are preserved by default when jobs are deleted; " +
		"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"
}

// Fields are kube-apiserver's for Jobs.
func (jobStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
}

func (jobStrategy) PrepareForCreate(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	DefaultJobSpec(&j.Spec)
	if len(j.Labels) == 0 && j.Spec.Template.Labels != nil {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
	j.Status = batchv1.JobStatus{}
}

// DefaultJobSpec fills in a Job's spec (of a Job or a CronJob's template)
// as the batch/v1 API defaults it.
func DefaultJobSpec(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr.To[int32](6)
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		}
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodReplacementPolicy == nil {
		spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	if p := spec.PodFailurePolicy; p != nil {
		for i := range p.Rules {
			for j := range p.Rules[i].OnPodConditions {
				if c := &p.Rules[i].OnPodConditions[j]; c.Status == "" {
					c.Status = corev1.ConditionTrue
				}
			}
		}
	}
	defaultPodSpec(&spec.Template.Spec)
}

// Identify gives the Job its selector and its pods' labels: the Job's
// name and UID, under both the batch.kubernetes.io keys and the legacy
// ones. Labels the user set are kept (validation refuses a mismatch).
func (jobStrategy) Identify(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	if ptr.Deref(j.Spec.ManualSelector, false) {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for key, v := range jobLabels(j) {
		if _, ok := j.Spec.Template.Labels[key]; !ok {
			j.Spec.Template.Labels[key] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

func jobLabels(j *batchv1.Job) map[string]string {
	return map[string]string{
		legacyJobNameLabel: j.Name, batchv1.JobNameLabel: j.Name,
		legacyControllerUIDLabel: string(j.UID), batchv1.ControllerUidLabel: string(j.UID),
	}
}

func (jobStrategy) Validate(obj runtime.Object) field.ErrorList {
	j := obj.(*batchv1.Job)
	errs := validateJobSpec(&j.Spec, field.NewPath("spec"))
	errs = append(errs, validateJobSelector(&j.Spec, field.NewPath("spec"))...)
	if !ptr.Deref(j.Spec.ManualSelector, false) {
		errs = append(errs, validateGeneratedSelector(j)...)
	}
	if isIndexed(&j.Spec) && ptr.Deref(j.Spec.Completions, 0) > 0 {
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

// validateGeneratedSelector checks that a Job whose selector the API
// generates has its pods' labels and a selector that matches them.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "template", "metadata", "labels")
	want := jobLabels(j)
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if got, ok := j.Spec.Template.Labels[key]; !ok {
			errs = append(errs, field.Required(path.Key(key), "must be '"+want[key]+"'"))
		} else if got != want[key] {
			errs = append(errs, field.Invalid(path.Key(key), got, "must be '"+want[key]+"'"))
		}
	}
	if s, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !s.Matches(labels.Set(want)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateJobSelector(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	if spec.Selector == nil {
		return field.ErrorList{field.Required(path.Child("selector"), "")}
	}
	errs := validateLabelSelector(spec.Selector, path.Child("selector"))
	if s, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !s.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

func isIndexed(spec *batchv1.JobSpec) bool {
	return ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

// validateJobSpec checks a Job's spec without its selector (a CronJob's
// template has none).
func validateJobSpec(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, v := range map[string]*int32{"parallelism": spec.Parallelism, "completions": spec.Completions,
		"backoffLimit": spec.BackoffLimit, "backoffLimitPerIndex": spec.BackoffLimitPerIndex, "maxFailedIndexes": spec.MaxFailedIndexes,
		"ttlSecondsAfterFinished": spec.TTLSecondsAfterFinished} {
		if v != nil {
			errs = append(errs, validateNonNegative(int64(*v), path.Child(name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*spec.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds"))...)
	}
	errs = append(errs, validateCompletionMode(spec, path)...)
	tpath := path.Child("template")
	errs = append(errs, validateLabels(spec.Template.Labels, tpath.Child("metadata", "labels"))...)
	errs = append(errs, validatePodSpec(&spec.Template.Spec, tpath.Child("spec"))...)
	errs = append(errs, validateJobRestartPolicy(spec, tpath.Child("spec", "restartPolicy"))...)
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, path.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		errs = append(errs, validateSuccessPolicy(spec, path.Child("successPolicy"))...)
	}
	return append(errs, validatePodReplacementPolicy(spec, path.Child("podReplacementPolicy"))...)
}

func validateCompletionMode(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	mode := ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion)
	errs := validateOneOf(mode, path.Child("completionMode"), batchv1.NonIndexedCompletion, batchv1.IndexedCompletion)
	if mode != batchv1.IndexedCompletion {
		for name, set := range map[string]bool{"backoffLimitPerIndex": spec.BackoffLimitPerIndex != nil,
			"maxFailedIndexes": spec.MaxFailedIndexes != nil, "successPolicy": spec.SuccessPolicy != nil} {
			if set {
				errs = append(errs, field.Invalid(path.Child(name), field.OmitValueType{}, "requires indexed completion mode"))
			}
		}
		return errs
	}
	if spec.Completions == nil {
		errs = append(errs, field.Required(path.Child("completions"), "when completion mode is Indexed"))
	}
	if p := ptr.Deref(spec.Parallelism, 0); p > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(path.Child("parallelism"), p, fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)))
	}
	if m := spec.MaxFailedIndexes; m != nil {
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
		if spec.Completions != nil && *m > *spec.Completions {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, "must be less than or equal to completions"))
		}
		if *m > maxFailedIndexesForIndexedJob {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
		}
	}
	return errs
}

func validateJobRestartPolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		return field.ErrorList{field.Required(path, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))}
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.NotSupported(path, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(path, rp, fmt.Sprintf(podFailurePolicyRestartMessage, corev1.RestartPolicyNever))}
	}
	return nil
}

func validatePodReplacementPolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	p := spec.PodReplacementPolicy
	switch {
	case p == nil:
		return nil
	case spec.PodFailurePolicy != nil && *p != batchv1.Failed:
		return field.ErrorList{field.NotSupported(path, *p, []batchv1.PodReplacementPolicy{batchv1.Failed})}
	}
	return validateOneOf(*p, path, batchv1.Failed, batchv1.TerminatingOrFailed)
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.PodFailurePolicy.Rules
	rpath := path.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rpath, len(rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range slices.Concat(spec.Template.Spec.Containers, spec.Template.Spec.InitContainers) {
		containers.Insert(c.Name)
	}
	for i := range rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &rules[i], rpath.Index(i), containers)...)
	}
	return errs
}

var podFailurePolicyActions = []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount,
	batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, path *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	apath := path.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(apath, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex && spec.BackoffLimitPerIndex == nil:
		errs = append(errs, field.Invalid(apath, rule.Action, "requires the backoffLimitPerIndex to be set"))
	case !slices.Contains(podFailurePolicyActions, rule.Action):
		errs = append(errs, field.NotSupported(apath, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, path.Child("onExitCodes"), containers)...)
	}
	for i, c := range rule.OnPodConditions {
		cpath := path.Child("onPodConditions").Index(i)
		errs = append(errs, validateQualifiedName(string(c.Type), cpath.Child("type"))...)
		errs = append(errs, validateOneOf(c.Status, cpath.Child("status"), corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown)...)
	}
	if n := len(rule.OnPodConditions); n > maxPodFailurePolicyConditions {
		errs = append(errs, field.TooMany(path.Child("onPodConditions"), n, maxPodFailurePolicyConditions))
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, path *field.Path, containers sets.Set[string]) field.ErrorList {
	errs := validateOneOf(r.Operator, path.Child("operator"), batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	if r.ContainerName != nil && !containers.Has(*r.ContainerName) {
		errs = append(errs, field.Invalid(path.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vpath := path.Child("values")
	switch n := len(r.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(vpath, r.Values, "at least one value is required"))
	case n > maxPodFailurePolicyExitCodes:
		errs = append(errs, field.TooMany(vpath, n, maxPodFailurePolicyExitCodes))
	}
	seen := sets.New[int32]()
	for i, v := range r.Values {
		if r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vpath.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(vpath.Index(i), v))
		}
		seen.Insert(v)
	}
	if !slices.IsSorted(r.Values) {
		errs = append(errs, field.Invalid(vpath, r.Values, "must be ordered"))
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.SuccessPolicy.Rules
	rpath := path.Child("rules")
	switch {
	case len(rules) == 0:
		errs = append(errs, field.Required(rpath, "at least one rules must be specified when the successPolicy is specified"))
	case len(rules) > maxSuccessPolicyRules:
		errs = append(errs, field.TooMany(rpath, len(rules), maxSuccessPolicyRules))
	}
	for i, r := range rules {
		p := rpath.Index(i)
		if r.SucceededCount == nil && r.SucceededIndexes == nil {
			errs = append(errs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		if r.SucceededIndexes != nil {
			if _, err := jobindexes.Parse(*r.SucceededIndexes, ptr.Deref(spec.Completions, 0)); err != nil {
				errs = append(errs, field.Invalid(p.Child("succeededIndexes"), *r.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if c := r.SucceededCount; c != nil {
			errs = append(errs, validateNonNegative(int64(*c), p.Child("succeededCount"))...)
			if spec.Completions != nil && *c > *spec.Completions {
				errs = append(errs, field.Invalid(p.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", *spec.Completions)))
			}
		}
	}
	return errs
}

// PrepareForUpdate defaults the spec; the generic handler keeps the
// status.
func (jobStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	DefaultJobSpec(&obj.(*batchv1.Job).Spec)
}

// ValidateUpdate refuses changes to what the controller has acted on:
// the selector, the pods' template once the Job has started, the
// completion mode and the policies; an Indexed Job's completions change
// only with its parallelism.
func (jobStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	spec := field.NewPath("spec")
	errs := selectorImmutable(j.Spec.Selector, o.Spec.Selector)
	startedOrRunning := !ptr.Deref(o.Spec.Suspend, false) || o.Status.StartTime != nil
	if startedOrRunning {
		errs = append(errs, immutable(!apiequality.Semantic.DeepEqual(j.Spec.Template, o.Spec.Template), spec.Child("template"), field.OmitValueType{})...)
	}
	for name, pair := range map[string][2]any{
		"completionMode":   {j.Spec.CompletionMode, o.Spec.CompletionMode},
		"podFailurePolicy": {j.Spec.PodFailurePolicy, o.Spec.PodFailurePolicy},
		"successPolicy":    {j.Spec.SuccessPolicy, o.Spec.SuccessPolicy},
		"manualSelector":   {j.Spec.ManualSelector, o.Spec.ManualSelector},
	} {
		errs = append(errs, immutable(!apiequality.Semantic.DeepEqual(pair[0], pair[1]), spec.Child(name), field.OmitValueType{})...)
	}
	if !apiequality.Semantic.DeepEqual(j.Spec.Completions, o.Spec.Completions) {
		elastic := isIndexed(&j.Spec) && j.Spec.Completions != nil && j.Spec.Parallelism != nil && *j.Spec.Completions == *j.Spec.Parallelism
		if !isIndexed(&j.Spec) {
			errs = append(errs, field.Invalid(spec.Child("completions"), j.Spec.Completions, "field is immutable"))
		} else if !elastic {
			errs = append(errs, field.Invalid(spec.Child("completions"), j.Spec.Completions, "can only be modified in tandem with spec.parallelism"))
		}
	}
	return errs
}

func (jobStrategy) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition{
		nameColumn,
		column("Status", "string", "Status of the job."),
		column("Completions", "string", "The desired number of successfully finished pods the job should be run with."),
		column("Duration", "string", "Time required to complete the job."),
		ageColumn,
	}, workloadWideColumns...)
}

func (jobStrategy) Row(obj runtime.Object) []any {
	j := obj.(*batchv1.Job)
	return append([]any{j.Name, jobStatusCell(j), jobCompletionsCell(j), jobDurationCell(&j.Status), age(j.CreationTimestamp)},
		workloadCells(&j.Spec.Template, j.Spec.Selector)...)
}

func jobStatusCell(j *batchv1.Job) string {
	order := []struct {
		cond batchv1.JobConditionType
		cell string
	}{{batchv1.JobComplete, "Complete"}, {batchv1.JobFailed, "Failed"}, {"", "Terminating"}, {batchv1.JobSuspended, "Suspended"},
		{batchv1.JobFailureTarget, "FailureTarget"}, {batchv1.JobSuccessCriteriaMet, "SuccessCriteriaMet"}}
	for _, o := range order {
		if o.cond == "" && j.DeletionTimestamp != nil || o.cond != "" && JobCondition(&j.Status, o.cond) {
			return o.cell
		}
	}
	return "Running"
}

// JobCondition reports whether the Job's condition t is True.
func JobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobCompletionsCell(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if p := ptr.Deref(j.Spec.Parallelism, 0); p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDurationCell(st *batchv1.JobStatus) string {
	switch {
	case st.StartTime == nil:
		return ""
	case st.CompletionTime == nil:
		return duration.HumanDuration(time.Since(st.StartTime.Time))
	}
	return duration.HumanDuration(st.CompletionTime.Sub(st.StartTime.Time))
}
