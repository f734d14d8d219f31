package registry

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/controlplane/cronschedule"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// CronJobs (batch/v1) are kube-apiserver's: a schedule in cron's standard
// format with an optional IANA time zone, and a Job template whose
// selector the Jobs made from it get when they are created.

type cronJobStrategy struct{ BaseStrategy }

var _ CreateValidator = cronJobStrategy{}

func (cronJobStrategy) PrepareForCreate(obj runtime.Object) {
	cj := obj.(*batchv1.CronJob)
	defaultCronJob(cj)
	cj.Status = batchv1.CronJobStatus{}
}

func defaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	defaultPodSpec(&spec.JobTemplate.Spec.Template.Spec)
}

func (cronJobStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultCronJob(obj.(*batchv1.CronJob))
}

// ValidateCreate limits the name to what leaves room for the Jobs'
// suffix (a Job's name is the CronJob's and "-" and the scheduled minute).
func (cronJobStrategy) ValidateCreate(obj runtime.Object) field.ErrorList {
	cj := obj.(*batchv1.CronJob)
	if len(cj.Name) > cronJobMaxNameLength {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobMaxNameLength))}
	}
	return nil
}

func (cronJobStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateCronJobSpec(&obj.(*batchv1.CronJob).Spec)
}

func validateCronJobSpec(spec *batchv1.CronJobSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), ""))
	} else {
		errs = append(errs, validateSchedule(spec.Schedule, path.Child("schedule"))...)
	}
	errs = append(errs, validateTimeZone(spec.TimeZone, path.Child("timeZone"))...)
	for name, v := range map[string]*int32{"successfulJobsHistoryLimit": spec.SuccessfulJobsHistoryLimit, "failedJobsHistoryLimit": spec.FailedJobsHistoryLimit} {
		if v != nil {
			errs = append(errs, validateNonNegative(int64(*v), path.Child(name))...)
		}
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*spec.StartingDeadlineSeconds, path.Child("startingDeadlineSeconds"))...)
	}
	errs = append(errs, validateOneOf(spec.ConcurrencyPolicy, path.Child("concurrencyPolicy"), batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent)...)
	tpath := path.Child("jobTemplate", "spec")
	tmpl := &spec.JobTemplate.Spec
	errs = append(errs, validateJobSpec(tmpl, tpath)...)
	if tmpl.Selector != nil {
		errs = append(errs, field.Invalid(tpath.Child("selector"), tmpl.Selector, "`selector` will be auto-generated"))
	}
	if ptr.Deref(tmpl.ManualSelector, false) {
		errs = append(errs, field.NotSupported(tpath.Child("manualSelector"), tmpl.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}

// validateSchedule checks a schedule's format; its time zone is the
// timeZone field's, never a TZ= prefix.
func validateSchedule(schedule string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cronschedule.Parse(schedule); err != nil {
		errs = append(errs, field.Invalid(path, schedule, err.Error()))
	}
	if strings.Contains(schedule, "TZ") {
		errs = append(errs, field.Invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// timeZonePart is one component of an IANA zone name (letters, digits
// for legacy names, '.', '-', '_', '+'; at most 14).
var timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, path *field.Path) field.ErrorList {
	switch {
	case tz == nil:
		return nil
	case *tz == "":
		return field.ErrorList{field.Invalid(path, tz, "timeZone must be nil or non-empty string")}
	case strings.EqualFold(*tz, "Local"):
		return field.ErrorList{field.Invalid(path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(path, tz, "unknown time zone "+*tz)}
		}
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return field.ErrorList{field.Invalid(path, tz, err.Error())}
	}
	return nil
}

func (cronJobStrategy) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition{
		nameColumn,
		column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
		column("Timezone", "string", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
		column("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
		column("Active", "integer", "A list of pointers to currently running jobs."),
		column("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
		ageColumn,
	}, workloadWideColumns...)
}

func (cronJobStrategy) Row(obj runtime.Object) []any {
	cj := obj.(*batchv1.CronJob)
	last := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = age(*t)
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = fmt.Sprint(*cj.Spec.Suspend)
	}
	return append([]any{cj.Name, cj.Spec.Schedule, ptr.Deref(cj.Spec.TimeZone, "<none>"), suspend, int64(len(cj.Status.Active)), last, age(cj.CreationTimestamp)},
		workloadCells(&cj.Spec.JobTemplate.Spec.Template, cj.Spec.JobTemplate.Spec.Selector)...)
}
