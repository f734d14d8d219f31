package controlplane_test

import (
	"context"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func busyboxTemplate(restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: restart,
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}}}}
}

// wantInvalid fails t unless err is a 422 whose causes name field.
func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: err = %v, want Invalid", what, err)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == field {
			return
		}
	}
	t.Errorf("%s: %v does not name %s", what, err, field)
}

// TestJobsAndCronJobs: batch/v1 is served as kube-apiserver serves it:
// a Job gets a selector of its own UID and its pods' labels (also when
// its name is generated), and bad specs are refused naming the field.
func TestJobsAndCronJobs(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	jobs := c.BatchV1().Jobs("default")
	j, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{GenerateName: "pi-"},
		Spec: batchv1.JobSpec{Template: busyboxTemplate(corev1.RestartPolicyNever)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; got != string(j.UID) || j.Spec.Template.Labels[batchv1.JobNameLabel] != j.Name {
		t.Errorf("selector %v and template labels %v, want the Job's UID %s and name %s", j.Spec.Selector, j.Spec.Template.Labels, j.UID, j.Name)
	}
	if *j.Spec.BackoffLimit != 6 || *j.Spec.Completions != 1 {
		t.Errorf("defaults: %+v", j.Spec)
	}
	_, err = jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: batchv1.JobSpec{
		Template: busyboxTemplate(corev1.RestartPolicyNever),
		PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("nope"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}},
	}}, metav1.CreateOptions{})
	wantInvalid(t, "a failure policy naming no container", err, "spec.podFailurePolicy.rules[0].onExitCodes.containerName")

	j.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	_, err = jobs.Update(ctx, j, metav1.UpdateOptions{})
	wantInvalid(t, "a running Job's template changed", err, "spec.template")

	cronJobs := c.BatchV1().CronJobs("default")
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick"}, Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", TimeZone: ptr.To("Europe/Paris"),
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: busyboxTemplate(corev1.RestartPolicyOnFailure)}}}}
	if _, err := cronJobs.Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cj.Name, cj.Spec.Schedule = "bad", "*/5 * * *"
	_, err = cronJobs.Create(ctx, cj, metav1.CreateOptions{})
	wantInvalid(t, "a four-field schedule", err, "spec.schedule")
}

// TestAutoscalersThroughBothAPIs: one HorizontalPodAutoscaler read and
// written through autoscaling/v2 (preferred) and autoscaling/v1.
func TestAutoscalersThroughBothAPIs(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	group, err := c.Discovery().RESTClient().Get().AbsPath("/apis/autoscaling").Do(ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	if g := group.(*metav1.APIGroup); g.PreferredVersion.Version != "v2" || len(g.Versions) != 2 {
		t.Errorf("autoscaling group = %+v, want v2 preferred over v1", g)
	}
	v1 := c.AutoscalingV1().HorizontalPodAutoscalers("default")
	if _, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas: 4, TargetCPUUtilizationPercentage: ptr.To[int32](60)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := c.AutoscalingV2().HorizontalPodAutoscalers("default")
	hpa, err := v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := hpa.Spec.Metrics; len(m) != 1 || m[0].Resource == nil || *m[0].Resource.Target.AverageUtilization != 60 || *hpa.Spec.MinReplicas != 1 {
		t.Fatalf("through v2: %+v", hpa.Spec)
	}
	hpa.Status.CurrentReplicas = 2
	hpa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue,
		Reason: "ReadyForNewScale", LastTransitionTime: metav1.Now()}}
	if _, err := v2.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := v1.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if old.Status.CurrentReplicas != 2 || old.Annotations["autoscaling.alpha.kubernetes.io/conditions"] == "" {
		t.Errorf("through v1: status %+v, annotations %v", old.Status, old.Annotations)
	}
	_, err = v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			MinReplicas: ptr.To[int32](5), MaxReplicas: 4}}, metav1.CreateOptions{})
	wantInvalid(t, "maxReplicas below minReplicas", err, "spec.maxReplicas")
	checkTable(t, ctx, c, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", "Targets", "cpu: <unknown>/60%")
}

// TestDisruptionBudgets: policy/v1 PodDisruptionBudgets are served with
// kube-apiserver's checks.
func TestDisruptionBudgets(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	pdbs := c.PolicyV1().PodDisruptionBudgets("default")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := pdbs.Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb.Name, pdb.Spec.MaxUnavailable = "both", ptr.To(intstr.FromInt32(1))
	_, err := pdbs.Create(ctx, pdb, metav1.CreateOptions{})
	wantInvalid(t, "minAvailable and maxUnavailable", err, "spec")
	checkTable(t, ctx, c, "/apis/policy/v1/namespaces/default/poddisruptionbudgets", "Min Available", "50%")
}

// checkTable fails t unless the table of path has column in its first
// row with cell.
func checkTable(t *testing.T, ctx context.Context, c kubernetes.Interface, path, column, cell string) {
	t.Helper()
	var table metav1.Table
	if err := c.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(&table); err != nil {
		t.Fatal(err)
	}
	for i, col := range table.ColumnDefinitions {
		if col.Name == column && len(table.Rows) > 0 {
			if got := table.Rows[0].Cells[i]; got != cell {
				t.Errorf("%s %s = %v, want %s", path, column, got, cell)
			}
			return
		}
	}
	t.Errorf("%s: no %s column or no rows: %+v", path, column, table)
}
