package registry

import (
	"reflect"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func newTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
	}
}

func newDeployment(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		Template: newTemplate(map[string]string{"app": "x"}),
	}}
	d.Name, d.Namespace = "x", "default"
	if mutate != nil {
		mutate(d)
	}
	deploymentStrategy{}.PrepareForCreate(d)
	return d
}

func newReplicaSet(mutate func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		Template: newTemplate(map[string]string{"app": "x", "pod-template-hash": "abc"}),
	}}
	rs.Name, rs.Namespace = "x-abc", "default"
	if mutate != nil {
		mutate(rs)
	}
	replicaSetStrategy{}.PrepareForCreate(rs)
	return rs
}

func TestDeploymentDefaults(t *testing.T) {
	d := newDeployment(func(d *appsv1.Deployment) { d.Status.Replicas = 7 })
	quarter := intstr.FromString("25%")
	tests := []struct {
		name      string
		got, want any
	}{
		{"replicas", *d.Spec.Replicas, int32(1)},
		{"strategy type", d.Spec.Strategy.Type, appsv1.RollingUpdateDeploymentStrategyType},
		{"maxSurge", *d.Spec.Strategy.RollingUpdate.MaxSurge, quarter},
		{"maxUnavailable", *d.Spec.Strategy.RollingUpdate.MaxUnavailable, quarter},
		{"revisionHistoryLimit", *d.Spec.RevisionHistoryLimit, int32(10)},
		{"progressDeadlineSeconds", *d.Spec.ProgressDeadlineSeconds, int32(600)},
		{"template restartPolicy", d.Spec.Template.Spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"template pullPolicy", d.Spec.Template.Spec.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"status cleared", d.Status, appsv1.DeploymentStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestDeploymentDefaultsKeepExplicit(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		check  func(*appsv1.Deployment) bool
	}{
		{"replicas 0 kept", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) },
			func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 0 }},
		{"Recreate gets no rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			func(d *appsv1.Deployment) bool { return d.Spec.Strategy.RollingUpdate == nil }},
		{"maxSurge kept, maxUnavailable defaulted", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(2))}
		}, func(d *appsv1.Deployment) bool {
			ru := d.Spec.Strategy.RollingUpdate
			return *ru.MaxSurge == intstr.FromInt32(2) && *ru.MaxUnavailable == intstr.FromString("25%")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := newDeployment(tt.mutate); !tt.check(d) {
				t.Errorf("unexpected spec %+v", d.Spec)
			}
		})
	}
}

func TestDeploymentValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{"valid", nil, nil},
		{"selector does not match template labels", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "y"} },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"missing selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"template restartPolicy Never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"template activeDeadlineSeconds", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{"template container without image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"spec.template.spec.containers[0].image: Required value"}},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }, []string{"spec.replicas: Invalid value"}},
		{"maxSurge 0 and maxUnavailable 0", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}, []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxSurge 0 alone", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0))}
		}, nil},
		{"negative maxSurge", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(-1))}
		}, []string{"spec.strategy.rollingUpdate: Invalid value"}},
		{"Recreate with rollingUpdate", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, []string{"spec.strategy.rollingUpdate: Forbidden"}},
		{"bogus strategy", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []string{"spec.strategy.type: Unsupported value"}},
		{"progress deadline not above minReadySeconds", func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds, d.Spec.ProgressDeadlineSeconds = 30, ptr.To[int32](30)
		}, []string{"spec.progressDeadlineSeconds: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, deploymentStrategy{}.Validate(newDeployment(tt.mutate)), tt.want...)
		})
	}
}

func TestReplicaSetValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.ReplicaSet)
		want   []string
	}{
		{"valid", nil, nil},
		{"selector expression not matching", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
		}, []string{"spec.template.metadata.labels: Invalid value"}},
		{"bad selector operator", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
		}, []string{"spec.selector.matchExpressions[0].operator: Invalid value"}},
		{"template restartPolicy OnFailure", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"negative minReadySeconds", func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, replicaSetStrategy{}.Validate(newReplicaSet(tt.mutate)), tt.want...)
		})
	}
}

func TestWorkloadSelectorImmutable(t *testing.T) {
	tests := []struct {
		name     string
		strategy Strategy
		old      runtime.Object
		update   func(runtime.Object)
		want     []string
	}{
		{"deployment replicas change", deploymentStrategy{}, newDeployment(nil),
			func(o runtime.Object) { o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](5) }, nil},
		{"deployment selector change", deploymentStrategy{}, newDeployment(nil), func(o runtime.Object) {
			o.(*appsv1.Deployment).Spec.Selector.MatchLabels["tier"] = "web"
		}, []string{"spec.selector: Invalid value"}},
		{"replicaset selector change", replicaSetStrategy{}, newReplicaSet(nil), func(o runtime.Object) {
			o.(*appsv1.ReplicaSet).Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "y"}}
		}, []string{"spec.selector: Invalid value"}},
		{"replicaset empty match expressions is no change", replicaSetStrategy{}, newReplicaSet(nil), func(o runtime.Object) {
			o.(*appsv1.ReplicaSet).Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.old.DeepCopyObject()
			tt.update(obj)
			tt.strategy.PrepareForUpdate(obj, tt.old)
			apitest.CheckErrorFields(t, tt.strategy.ValidateUpdate(obj, tt.old), tt.want...)
		})
	}
}

func TestWorkloadScale(t *testing.T) {
	tests := []struct {
		name     string
		strategy Scaler
		obj      runtime.Object
		replicas func(runtime.Object) int32
	}{
		{"replicaset", replicaSetStrategy{}, newReplicaSet(func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](2) }),
			func(o runtime.Object) int32 { return *o.(*appsv1.ReplicaSet).Spec.Replicas }},
		{"deployment", deploymentStrategy{}, newDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) }),
			func(o runtime.Object) int32 { return *o.(*appsv1.Deployment).Spec.Replicas }},
		{"replicationcontroller", replicationControllerStrategy{}, newReplicationController(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](2) }),
			func(o runtime.Object) int32 { return *o.(*corev1.ReplicationController).Spec.Replicas }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.strategy.Scale(tt.obj)
			if sc.Spec.Replicas != 2 || sc.Status.Replicas != 0 || sc.Status.Selector != "app=x" {
				t.Errorf("scale = %+v, want spec 2, status 0, selector app=x", sc)
			}
			tt.strategy.SetReplicas(tt.obj, 4)
			if got := tt.replicas(tt.obj); got != 4 {
				t.Errorf("replicas after setReplicas(4) = %d", got)
			}
			if got := tt.strategy.Scale(tt.obj).Spec.Replicas; got != 4 {
				t.Errorf("scale().Spec.Replicas after setReplicas(4) = %d", got)
			}
		})
	}
}

func TestScaleStatus(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	sc := scaleFor(ptr.To[int32](3), 2, sel)
	if sc.Spec.Replicas != 3 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=x,tier in (a,b)" {
		t.Errorf("scale = %+v", sc)
	}
	if sc := scaleFor(nil, 0, nil); sc.Spec.Replicas != 0 || sc.Status.Selector != "" {
		t.Errorf("scale of nothing = %+v", sc)
	}
}
