package replicaset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
)

// newRC is a ReplicationController "web" in namespace "ns" selecting
// app=web, the twin of newRS.
func newRC(replicas int32) *corev1.ReplicationController {
	rs := newRS(replicas)
	return &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{Replicas: &replicas, Selector: testLabels,
			Template: &rs.Spec.Template},
	}
}

// TestReplicationControllerSync runs the shared sync on a
// ReplicationController: it adopts a matching orphan, creates the missing
// pods with the ReplicationController as their controller, writes the
// status through replicationcontrollers/status, and its events name the
// ReplicationController.
func TestReplicationControllerSync(t *testing.T) {
	rc := newRC(3)
	f := newFixtureOf(t, replicationControllerKind, rc, newPod("orphan"))
	f.recorder.IncludeObject = true
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("patch pods orphan"); n != 1 {
		t.Errorf("orphan not adopted: %v", f.actions())
	}
	var created []*corev1.Pod
	var status *corev1.ReplicationControllerStatus
	for _, a := range f.client.Actions() {
		switch {
		case a.GetVerb() == "create" && a.GetResource().Resource == "pods":
			created = append(created, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
		case a.GetVerb() == "update" && a.GetResource().Resource == "replicationcontrollers" && a.GetSubresource() == "status":
			status = &a.(clienttesting.UpdateAction).GetObject().(*corev1.ReplicationController).Status
		}
	}
	if len(created) != 2 {
		t.Fatalf("created %d pods, want 2: %v", len(created), f.actions())
	}
	ref := metav1.GetControllerOf(created[0])
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "ReplicationController" || ref.UID != rc.UID || ref.Name != "web" {
		t.Errorf("created pod's controller %+v, want the ReplicationController", ref)
	}
	if status == nil || status.Replicas != 1 || status.ObservedGeneration != 1 {
		t.Errorf("status %+v, want 1 replica (the adopted orphan) at generation 1", status)
	}
	events := f.events()
	if len(events) == 0 || !strings.Contains(events[0], "kind=ReplicationController") || !strings.Contains(events[0], "apiVersion=v1") {
		t.Errorf("events %v, want them on the ReplicationController", events)
	}
}

// TestReplicationControllerRoundTrip checks that what the controller sees
// of a ReplicationController converts back to the same object.
func TestReplicationControllerRoundTrip(t *testing.T) {
	rc := newRC(2)
	rc.Spec.MinReadySeconds = 5
	rc.Status = corev1.ReplicationControllerStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
		ObservedGeneration: 1, Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure,
			Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}}
	back := asReplicationController(asReplicaSet(rc))
	if !equality.Semantic.DeepEqual(back, rc) {
		t.Errorf("round trip changed the object:\n got %+v\nwant %+v", back, rc)
	}
}
