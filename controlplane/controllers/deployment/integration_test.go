package deployment_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	revisionKey = "deployment.kubernetes.io/revision"
	changeCause = "kubernetes.io/change-cause"
)

// TestDeploymentController runs the controller, with the ReplicaSet
// controller and the scheduler, in a real control plane. There are no
// nodes: pods stay unbound, a helper marks them Ready, and a deleted pod
// goes at once.
func TestDeploymentController(t *testing.T) {
	s := servertest.Start(t)
	client := s.Client()
	t.Run("rollout, rolling update and undo", func(t *testing.T) { testRollingUpdate(t, client) })
	t.Run("recreate", func(t *testing.T) { testRecreate(t, client) })
	t.Run("paused", func(t *testing.T) { testPaused(t, client) })
	t.Run("progress deadline", func(t *testing.T) { testProgressDeadline(t, client) })
	t.Run("adopts and releases replica sets", func(t *testing.T) { testAdoption(t, client) })
	t.Run("revision history limit", func(t *testing.T) { testHistoryLimit(t, client) })
}

func testRollingUpdate(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-rolling", true)
	d := deployment("web", 4, "busybox:1")
	d.Annotations = map[string]string{changeCause: "create"}
	d = c.create(d)

	// (a) 4 ready and available, one ReplicaSet named by its hash.
	d = c.waitRolledOut("web")
	checkAvailable(t, d, corev1.ConditionTrue, "MinimumReplicasAvailable")
	rss := c.replicaSets(d)
	if len(rss) != 1 {
		t.Fatalf("%d replica sets, want 1", len(rss))
	}
	first := rss[0]
	hash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" || first.Name != "web-"+hash || first.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		first.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("replica set %s labels %v selector %v template labels %v", first.Name, first.Labels, first.Spec.Selector, first.Spec.Template.Labels)
	}
	checkRS(t, first, "1", 4)
	if first.Annotations["deployment.kubernetes.io/desired-replicas"] != "4" || first.Annotations["deployment.kubernetes.io/max-replicas"] != "5" || first.Annotations[changeCause] != "create" {
		t.Errorf("replica set annotations %v", first.Annotations)
	}
	if p := condition(d, appsv1.DeploymentProgressing); p.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", first.Name) {
		t.Errorf("Progressing message %q", p.Message)
	}
	if d.Annotations[revisionKey] != "1" || d.Status.ReadyReplicas != 4 {
		t.Errorf("deployment revision %q ready %d", d.Annotations[revisionKey], d.Status.ReadyReplicas)
	}
	waitEvents(c, d, fmt.Sprintf("Scaled up replica set %s from 0 to 4", first.Name))

	// (b) A new image rolls to a new ReplicaSet, never below 3 ready pods.
	ready := c.watchPods(atLeastReady(3))
	c.update("web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		d.Annotations[changeCause] = "image 2"
	})
	d = c.waitRolledOut("web")
	rss = c.replicaSets(d)
	second := byRevision(rss, "2")
	if len(rss) != 2 || second == nil || second.Name == first.Name {
		t.Fatalf("replica sets %v, want %s and a new one at revision 2", rsNames(rss), first.Name)
	}
	checkRS(t, byRevision(rss, "1"), "1", 0)
	checkRS(t, second, "2", 4)
	if d.Annotations[revisionKey] != "2" || second.Annotations[changeCause] != "image 2" {
		t.Errorf("deployment revision %q, new replica set change-cause %q", d.Annotations[revisionKey], second.Annotations[changeCause])
	}
	if err := ready.err(); err != nil {
		t.Errorf("during the rolling update: %v", err)
	}
	waitEvents(c, d, fmt.Sprintf("Scaled up replica set %s from 0 to 1", second.Name), fmt.Sprintf("Scaled down replica set %s from 1 to 0", first.Name))

	// (c) Undo, as kubectl does it, brings the first ReplicaSet back as
	// revision 3.
	c.undo("web", byRevision(rss, "1"))
	d = c.waitDeployment("web", "revision 3 rolled out", func(d *appsv1.Deployment) bool {
		return rolledOut(d) && d.Annotations[revisionKey] == "3"
	})
	rss = c.replicaSets(d)
	back := byRevision(rss, "3")
	if len(rss) != 2 || back == nil || back.Name != first.Name {
		t.Fatalf("replica sets %v, want %s back at revision 3", rsNames(rss), first.Name)
	}
	checkRS(t, back, "3", 4)
	checkRS(t, byRevision(rss, "2"), "2", 0)
	if back.Annotations["deployment.kubernetes.io/revision-history"] != "1" || back.Annotations[changeCause] != "create" {
		t.Errorf("rolled back replica set annotations %v", back.Annotations)
	}
	if d.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("image %s after undo", d.Spec.Template.Spec.Containers[0].Image)
	}
	if err := ready.err(); err != nil {
		t.Errorf("during the undo: %v", err)
	}
}

func testRecreate(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-recreate", true)
	d := deployment("db", 3, "busybox:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	c.create(d)
	d = c.waitRolledOut("db")
	old := c.replicaSets(d)[0]

	pods := c.watchPods(oneTemplate)
	c.update("db", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	d = c.waitRolledOut("db")
	rss := c.replicaSets(d)
	cur := byRevision(rss, "2")
	if len(rss) != 2 || cur == nil {
		t.Fatalf("replica sets %v", rsNames(rss))
	}
	checkRS(t, byRevision(rss, "1"), "1", 0)
	checkRS(t, cur, "2", 3)
	if err := pods.err(); err != nil {
		t.Errorf("old and new pods together: %v", err)
	}
	down := fmt.Sprintf("Scaled down replica set %s from 3 to 0", old.Name)
	up := fmt.Sprintf("Scaled up replica set %s from 0 to 3", cur.Name)
	waitEvents(c, d, down, up)
}

func testPaused(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-paused", true)
	c.create(deployment("api", 2, "busybox:1"))
	d := c.waitRolledOut("api")

	c.update("api", func(d *appsv1.Deployment) { d.Spec.Paused = true })
	c.waitDeployment("api", "paused condition", func(d *appsv1.Deployment) bool {
		p := condition(d, appsv1.DeploymentProgressing)
		return p != nil && p.Reason == "DeploymentPaused" && p.Status == corev1.ConditionUnknown && p.Message == "Deployment is paused"
	})
	c.update("api", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		d.Spec.Replicas = new(int32(3))
	})
	// Scaling applies while paused; the new template does not.
	d = c.waitDeployment("api", "scaled while paused", func(d *appsv1.Deployment) bool {
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 3
	})
	servertest.Consistently(t, "the paused rollout stays", settle, func() (bool, string) {
		rss := c.replicaSets(d)
		return len(rss) == 1 && *rss[0].Spec.Replicas == 3, fmt.Sprint(rsNames(rss))
	})
	if d.Status.UpdatedReplicas != 0 || d.Annotations[revisionKey] != "1" {
		t.Errorf("paused: updated %d revision %q", d.Status.UpdatedReplicas, d.Annotations[revisionKey])
	}

	c.update("api", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	d = c.waitRolledOut("api")
	rss := c.replicaSets(d)
	if len(rss) != 2 || byRevision(rss, "2") == nil || *byRevision(rss, "2").Spec.Replicas != 3 {
		t.Errorf("after resume: replica sets %v", rsNames(rss))
	}
}

func testProgressDeadline(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-deadline", false) // pods never become ready
	d := deployment("stuck", 1, "busybox:1")
	d.Spec.ProgressDeadlineSeconds = new(int32(2))
	c.create(d)
	d = c.waitDeployment("stuck", "timed out", func(d *appsv1.Deployment) bool {
		p := condition(d, appsv1.DeploymentProgressing)
		return p != nil && p.Reason == "ProgressDeadlineExceeded"
	})
	rs := c.replicaSets(d)[0]
	p := condition(d, appsv1.DeploymentProgressing)
	if p.Status != corev1.ConditionFalse || p.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs.Name) {
		t.Errorf("Progressing %+v", p)
	}
	checkAvailable(t, d, corev1.ConditionFalse, "MinimumReplicasUnavailable")
}

func testAdoption(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-adopt", true)
	d := deployment("legacy", 2, "busybox:1")
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-by-hand", Labels: map[string]string{"app": "legacy"}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: new(int32(1)), Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	orphan, err := client.AppsV1().ReplicaSets(c.ns).Create(t.Context(), orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d = c.create(d)
	d = c.waitRolledOut("legacy")
	rss := c.replicaSets(d)
	if len(rss) != 1 || rss[0].UID != orphan.UID {
		t.Fatalf("replica sets %v, want only the adopted %s", rsNames(rss), orphan.Name)
	}
	ref := metav1.GetControllerOf(rss[0])
	if ref.UID != d.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner %+v", ref)
	}
	checkRS(t, rss[0], "1", 2)

	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if _, err := client.AppsV1().ReplicaSets(c.ns).Patch(t.Context(), orphan.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the relabelled replica set released", func() (bool, string) {
		rs, err := client.AppsV1().ReplicaSets(c.ns).Get(t.Context(), orphan.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(rs.OwnerReferences) == 0, fmt.Sprint(rs.OwnerReferences)
	})
	d = c.waitRolledOut("legacy")
	if rss := c.replicaSets(d); len(rss) != 1 || !strings.HasPrefix(rss[0].Name, "legacy-") || rss[0].UID == orphan.UID {
		t.Errorf("after the release: replica sets %v", rsNames(rss))
	}
}

func testHistoryLimit(t *testing.T, client kubernetes.Interface) {
	c := newCluster(t, client, "deploy-history", true)
	d := deployment("hist", 1, "busybox:0")
	d.Spec.RevisionHistoryLimit = new(int32(1))
	c.create(d)
	c.waitRolledOut("hist")
	for i := 1; i <= 3; i++ {
		c.update("hist", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = fmt.Sprint("busybox:", i) })
		c.waitDeployment("hist", "rolled out", func(d *appsv1.Deployment) bool {
			return rolledOut(d) && d.Annotations[revisionKey] == fmt.Sprint(i+1)
		})
	}
	waitFor(t, "history of one old replica set", func() (bool, string) {
		rss := c.replicaSets(c.get("hist"))
		var revs []string
		for _, rs := range rss {
			revs = append(revs, rs.Annotations[revisionKey])
		}
		slices.Sort(revs)
		return slices.Equal(revs, []string{"3", "4"}), fmt.Sprint(revs)
	})
}

func checkAvailable(t *testing.T, d *appsv1.Deployment, status corev1.ConditionStatus, reason string) {
	t.Helper()
	if a := condition(d, appsv1.DeploymentAvailable); a == nil || a.Status != status || a.Reason != reason {
		t.Errorf("Available %+v, want %s %s", a, status, reason)
	}
}

// checkRS checks a ReplicaSet's revision and size, and that it reports
// that many pods, all available.
func checkRS(t *testing.T, rs *appsv1.ReplicaSet, revision string, replicas int32) {
	t.Helper()
	if rs == nil {
		t.Errorf("no replica set at revision %s", revision)
		return
	}
	if rs.Annotations[revisionKey] != revision || *rs.Spec.Replicas != replicas {
		t.Errorf("replica set %s: revision %q replicas %d, want %s and %d", rs.Name, rs.Annotations[revisionKey], *rs.Spec.Replicas, revision, replicas)
	}
}

func rsNames(rss []*appsv1.ReplicaSet) []string {
	var out []string
	for _, rs := range rss {
		out = append(out, fmt.Sprintf("%s(rev %s, %d)", rs.Name, rs.Annotations[revisionKey], *rs.Spec.Replicas))
	}
	return out
}

// waitEvents waits until the Deployment has ScalingReplicaSet events
// with each of the messages, in that order.
func waitEvents(c *cluster, d *appsv1.Deployment, want ...string) {
	c.t.Helper()
	waitFor(c.t, "events "+strings.Join(want, "; "), func() (bool, string) {
		got := c.events(d, "ScalingReplicaSet")
		last := -1
		for _, w := range want {
			i := slices.Index(got, w)
			if i <= last {
				return false, strings.Join(got, "; ")
			}
			last = i
		}
		return true, ""
	})
}
