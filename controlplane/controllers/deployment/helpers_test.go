package deployment

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// t0 is the clock of the pure tests.
var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// newDeployment is a RollingUpdate Deployment "web" in namespace "ns" of
// replicas pods, with maxSurge and maxUnavailable as given ("" for the
// default 25%), selecting app=web, changed by opts.
func newDeployment(replicas int32, surge, unavailable string, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: intOrPercent(surge), MaxUnavailable: intOrPercent(unavailable),
				},
			},
			RevisionHistoryLimit:    new(int32(10)),
			ProgressDeadlineSeconds: new(int32(600)),
		},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

func intOrPercent(s string) *intstr.IntOrString {
	if s == "" {
		s = "25%"
	}
	v := intstr.Parse(s)
	return &v
}

func recreate(d *appsv1.Deployment) {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
}

// rsOpt changes a test ReplicaSet.
type rsOpt func(*appsv1.ReplicaSet)

// testRS is a ReplicaSet "name" of size replicas owned by "web", created
// age minutes before t0 (so larger ages are older), changed by opts.
func testRS(name string, replicas int32, age int, opts ...rsOpt) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1,
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Minute)),
			Labels:            map[string]string{"app": "web"},
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ObservedGeneration: 1},
	}
	for _, o := range opts {
		o(rs)
	}
	return rs
}

// available sets the ReplicaSet's ready and available pods.
func available(n int32) rsOpt {
	return func(rs *appsv1.ReplicaSet) { rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = n, n }
}

// pods sets the pods the ReplicaSet reports.
func pods(n int32) rsOpt { return func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = n } }

func rev(n int) rsOpt { return annotate(revisionAnnotation, strconv.Itoa(n)) }

func annotate(k, v string) rsOpt {
	return func(rs *appsv1.ReplicaSet) {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[k] = v
	}
}

// sized sets the replicas annotations as if scaled for desired and max.
func sized(desired, maxReplicas int32) rsOpt {
	return func(rs *appsv1.ReplicaSet) { setReplicasAnnotations(rs, desired, maxReplicas) }
}

// describe renders a plan as "name=replicas" items.
func describe(plan []resize) []string {
	var out []string
	for _, s := range plan {
		out = append(out, fmt.Sprintf("%s=%d", s.rs.Name, s.replicas))
	}
	return out
}
