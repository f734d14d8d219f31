package registry

import (
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func newDaemonSet(mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		Template: newTemplate(map[string]string{"app": "x"}),
	}}
	ds.Name, ds.Namespace = "x", "default"
	if mutate != nil {
		mutate(ds)
	}
	daemonSetStrategy{}.PrepareForCreate(ds)
	return ds
}

func TestDaemonSetDefaultsAndValidate(t *testing.T) {
	ds := newDaemonSet(nil)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 ||
		*ds.Spec.RevisionHistoryLimit != 10 || ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" {
		t.Errorf("defaults: %+v %v", ds.Spec, ds.Annotations)
	}
	apitest.CheckErrorFields(t, daemonSetStrategy{}.Validate(ds))
	both := newDaemonSet(func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("10%"))}
	})
	apitest.CheckErrorFields(t, daemonSetStrategy{}.Validate(both), "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value")
	empty := newDaemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} })
	apitest.CheckErrorFields(t, daemonSetStrategy{}.Validate(empty), "spec.selector: Invalid value")

	// A template change counts; other changes do not.
	update := ds.DeepCopy()
	update.Spec.MinReadySeconds = 5
	daemonSetStrategy{}.PrepareForUpdate(update, ds)
	if update.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" {
		t.Errorf("template generation after a spec change: %v", update.Annotations)
	}
	update.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	daemonSetStrategy{}.PrepareForUpdate(update, ds)
	if update.Annotations[appsv1.DeprecatedTemplateGeneration] != "2" {
		t.Errorf("template generation after a template change: %v", update.Annotations)
	}
}

func TestControllerRevisionDataImmutable(t *testing.T) {
	cr := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"a":1}`)}, Revision: 1}
	apitest.CheckErrorFields(t, controllerRevisionStrategy{}.Validate(cr))
	apitest.CheckErrorFields(t, controllerRevisionStrategy{}.Validate(&appsv1.ControllerRevision{}), "data: Required value")
	changed := cr.DeepCopy()
	changed.Data.Raw = []byte(`{"a":2}`)
	apitest.CheckErrorFields(t, controllerRevisionStrategy{}.ValidateUpdate(changed, cr), "data: Invalid value")
}
