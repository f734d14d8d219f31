package registry

import (
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// newJob is a Job as the API makes it from a minimal manifest changed by
// mutate: defaulted, named "pi" with UID "u1", its selector generated.
func newJob(mutate func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{Spec: batchv1.JobSpec{Template: newTemplate(nil)}}
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	j.Name, j.Namespace = "pi", "default"
	if mutate != nil {
		mutate(j)
	}
	jobStrategy{}.PrepareForCreate(j)
	j.UID = types.UID("u1")
	jobStrategy{}.Identify(j)
	return j
}

func TestJobDefaultsAndGeneratedSelector(t *testing.T) {
	j := newJob(nil)
	if *j.Spec.Completions != 1 || *j.Spec.Parallelism != 1 || *j.Spec.BackoffLimit != 6 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion ||
		*j.Spec.Suspend || *j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed || *j.Spec.ManualSelector {
		t.Errorf("defaults: %+v", j.Spec)
	}
	want := map[string]string{"job-name": "pi", batchv1.JobNameLabel: "pi", "controller-uid": "u1", batchv1.ControllerUidLabel: "u1"}
	for k, v := range want {
		if j.Spec.Template.Labels[k] != v {
			t.Errorf("template label %s = %q, want %q", k, j.Spec.Template.Labels[k], v)
		}
	}
	if got := metav1.FormatLabelSelector(j.Spec.Selector); got != batchv1.ControllerUidLabel+"=u1" {
		t.Errorf("selector %s", got)
	}
	if errs := (jobStrategy{}).Validate(j); len(errs) > 0 {
		t.Errorf("valid job refused: %v", errs)
	}
	withFailurePolicy := newJob(func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}
	})
	if *withFailurePolicy.Spec.PodReplacementPolicy != batchv1.Failed || withFailurePolicy.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Errorf("pod failure policy defaults: %+v", withFailurePolicy.Spec)
	}
}

func TestJobValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"restart Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{"spec.template.spec.restartPolicy: Required value"}},
		{"negative parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) },
			[]string{"spec.parallelism: Invalid value"}},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr.To[int32](2)
		}, []string{"spec.completions: Required value"}},
		{"per-index limit of a non-indexed job", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) },
			[]string{"spec.backoffLimitPerIndex: Invalid value"}},
		{"user label against the generated selector", func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"job-name": "other"} },
			[]string{"spec.template.metadata.labels[job-name]: Invalid value"}},
		{"failure policy rule that cannot apply", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("nope"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{0, 3, 2}}}}}
		}, []string{"spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value",
			"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value", "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value"}},
		{"failure policy with restart OnFailure", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionCount,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}}}}}
		}, []string{"spec.template.spec.restartPolicy: Invalid value"}},
		{"success policy index out of range", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](3)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,5")}}}
		}, []string{"spec.successPolicy.rules[0].succeededIndexes: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, jobStrategy{}.Validate(newJob(tt.mutate)), tt.want...)
		})
	}
}

func TestJobValidateUpdate(t *testing.T) {
	old := newJob(nil)
	j := old.DeepCopy()
	j.Spec.Template.Spec.Containers[0].Image = "other:1"
	j.Spec.Completions = ptr.To[int32](4)
	apitest.CheckErrorFields(t, jobStrategy{}.ValidateUpdate(j, old), "spec.completions: Invalid value", "spec.template: Invalid value")

	// A suspended Job that never started may change its template; an
	// Indexed one its completions along with its parallelism.
	old = newJob(func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2)
	})
	j = old.DeepCopy()
	j.Spec.Template.Spec.Containers[0].Image = "other:1"
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
	apitest.CheckErrorFields(t, jobStrategy{}.ValidateUpdate(j, old))
}

func TestJobRow(t *testing.T) {
	j := newJob(func(j *batchv1.Job) { j.Spec.Completions = nil; j.Spec.Parallelism = ptr.To[int32](3) })
	j.Status.Succeeded = 1
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	row := jobStrategy{}.Row(j)
	if row[1] != "Complete" || row[2] != "1/1 of 3" {
		t.Errorf("row = %v", row)
	}
}

func newCronJob(mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: newTemplate(nil)}}}}
	cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	cj.Name, cj.Namespace = "hello", "default"
	if mutate != nil {
		mutate(cj)
	}
	cronJobStrategy{}.PrepareForCreate(cj)
	return cj
}

func TestCronJobValidate(t *testing.T) {
	cj := newCronJob(nil)
	if cj.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 || *cj.Spec.Suspend {
		t.Errorf("defaults: %+v", cj.Spec)
	}
	apitest.CheckErrorFields(t, cronJobStrategy{}.Validate(cj))
	tests := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []string
	}{
		{"schedule that does not parse", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"TZ in the schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"unknown time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }, []string{"spec.timeZone: Invalid value"}},
		{"a selector in the template", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, []string{"spec.jobTemplate.spec.selector: Invalid value"}},
		{"concurrency policy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" }, []string{"spec.concurrencyPolicy: Unsupported value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, cronJobStrategy{}.Validate(newCronJob(tt.mutate)), tt.want...)
		})
	}
	errs := cronJobStrategy{}.Validate(newCronJob(func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" }))
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "61") {
		t.Errorf("schedule error %v does not name the bad field", errs)
	}
	if errs := (cronJobStrategy{}).ValidateCreate(newCronJob(func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 53) })); len(errs) != 1 {
		t.Errorf("a 53-character name: %v", errs)
	}
	if errs := (cronJobStrategy{}).Validate(newCronJob(func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Europe/Paris") })); len(errs) > 0 {
		t.Errorf("Europe/Paris refused: %v", errs)
	}
}
