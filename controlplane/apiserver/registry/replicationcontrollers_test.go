package registry

import (
	"maps"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// newReplicationController is the classic example before defaults: a
// template labelled app=x and no selector, changed by mutate.
func newReplicationController(mutate func(*corev1.ReplicationController)) *corev1.ReplicationController {
	template := newTemplate(map[string]string{"app": "x"})
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Template: &template}}
	rc.Name, rc.Namespace = "x", "default"
	if mutate != nil {
		mutate(rc)
	}
	replicationControllerStrategy{}.PrepareForCreate(rc)
	return rc
}

func TestReplicationControllerDefaults(t *testing.T) {
	rc := newReplicationController(func(rc *corev1.ReplicationController) { rc.Status.Replicas = 3 })
	want := map[string]string{"app": "x"}
	if !maps.Equal(rc.Spec.Selector, want) || !maps.Equal(rc.Labels, want) {
		t.Errorf("selector %v, labels %v; want both from the template: %v", rc.Spec.Selector, rc.Labels, want)
	}
	if *rc.Spec.Replicas != 1 || rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || rc.Status.Replicas != 0 {
		t.Errorf("replicas %d, restartPolicy %q, status %+v", *rc.Spec.Replicas, rc.Spec.Template.Spec.RestartPolicy, rc.Status)
	}
	own := newReplicationController(func(rc *corev1.ReplicationController) {
		rc.Labels, rc.Spec.Selector = map[string]string{"team": "a"}, map[string]string{"app": "x"}
	})
	if !maps.Equal(own.Labels, map[string]string{"team": "a"}) {
		t.Errorf("labels %v: set labels are kept", own.Labels)
	}
}

func TestReplicationControllerValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.ReplicationController)
		want   []string
	}{
		{"valid", nil, nil},
		{"no template", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil }, []string{"spec.template: Required value"}},
		{"selector not matching the template", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "y"} },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"no selector and no template labels", func(rc *corev1.ReplicationController) { rc.Spec.Template.Labels = nil },
			[]string{"spec.selector: Required value"}},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](-1) }, []string{"spec.replicas: Invalid value"}},
		{"template restartPolicy Never", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, replicationControllerStrategy{}.Validate(newReplicationController(tt.mutate)), tt.want...)
		})
	}
}

func TestReplicationControllerRow(t *testing.T) {
	rc := newReplicationController(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](3) })
	rc.Status.Replicas, rc.Status.ReadyReplicas = 2, 1
	s := replicationControllerStrategy{}
	row, cols := s.Row(rc), s.Columns()
	if len(row) != len(cols) {
		t.Fatalf("%d cells for %d columns", len(row), len(cols))
	}
	want := []any{"x", int64(3), int64(2), int64(1)}
	for i, w := range want {
		if row[i] != w {
			t.Errorf("cell %s = %v, want %v", cols[i].Name, row[i], w)
		}
	}
	if row[5] != "web" || row[6] != "nginx:1.25" || row[7] != "app=x" {
		t.Errorf("wide cells %v", row[5:])
	}
}
