package deployment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	// pollTimeout bounds every wait.
	pollTimeout = 60 * time.Second
	// settle is how long a state must hold to count as stable.
	settle = 3 * time.Second
)

// cluster is one test's namespace in the shared control plane.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
}

// newCluster creates namespace ns; with ready, every pod created in it is
// marked Ready soon after, as an agent would once its containers run.
func newCluster(t *testing.T, client kubernetes.Interface, ns string, ready bool) *cluster {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, client: client, ns: ns}
	if ready {
		go c.markPodsReady()
	}
	return c
}

// markPodsReady sets Running and Ready=True on every pod of the namespace
// that lacks it, until the test ends. Failures (a pod deleted meanwhile, a
// conflict) are retried at the next tick.
func (c *cluster) markPodsReady() {
	ctx := c.t.Context()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil || isReady(p) {
				continue
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = append(slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady }),
				corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
			_, _ = c.client.CoreV1().Pods(c.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deployment is a Deployment of replicas busybox pods labelled app=name.
func deployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Command: []string{"sleep", "3600"}}}},
			},
		},
	}
}

func rollingUpdate(surge, unavailable string) appsv1.DeploymentStrategy {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
}

func (c *cluster) create(d *appsv1.Deployment) *appsv1.Deployment {
	c.t.Helper()
	created, err := c.client.AppsV1().Deployments(c.ns).Create(c.t.Context(), d, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return created
}

func (c *cluster) get(name string) *appsv1.Deployment {
	c.t.Helper()
	d, err := c.client.AppsV1().Deployments(c.ns).Get(c.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// update changes the Deployment name with mutate, retrying conflicts.
func (c *cluster) update(name string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	c.t.Helper()
	var updated *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.client.AppsV1().Deployments(c.ns).Get(c.t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(d)
		updated, err = c.client.AppsV1().Deployments(c.ns).Update(c.t.Context(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("update deployment %s: %v", name, err)
	}
	return updated
}

// undo does what `kubectl rollout undo` does: it puts the template of the
// ReplicaSet to return to (without its hash label) back into the
// Deployment, with that ReplicaSet's annotations but the Deployment's own
// bookkeeping ones, in one JSON patch.
func (c *cluster) undo(name string, to *appsv1.ReplicaSet) {
	c.t.Helper()
	d := c.get(name)
	template := to.Spec.Template.DeepCopy()
	delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	annotations := map[string]string{}
	skip := map[string]bool{
		corev1.LastAppliedConfigAnnotation: true, "deployment.kubernetes.io/revision": true,
		"deployment.kubernetes.io/revision-history": true, "deployment.kubernetes.io/desired-replicas": true,
		"deployment.kubernetes.io/max-replicas": true, appsv1.DeprecatedRollbackTo: true,
	}
	for k := range skip {
		if v, ok := d.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	for k, v := range to.Annotations {
		if !skip[k] {
			annotations[k] = v
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": template},
		{"op": "replace", "path": "/metadata/annotations", "value": annotations},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.client.AppsV1().Deployments(c.ns).Patch(c.t.Context(), name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		c.t.Fatalf("undo %s: %v", name, err)
	}
}

// replicaSets lists the namespace's ReplicaSets controlled by d, by name.
func (c *cluster) replicaSets(d *appsv1.Deployment) []*appsv1.ReplicaSet {
	c.t.Helper()
	list, err := c.client.AppsV1().ReplicaSets(c.ns).List(c.t.Context(), metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var owned []*appsv1.ReplicaSet
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], d) {
			owned = append(owned, &list.Items[i])
		}
	}
	return owned
}

// byRevision finds the ReplicaSet with revision annotation rev.
func byRevision(rss []*appsv1.ReplicaSet, rev string) *appsv1.ReplicaSet {
	for _, rs := range rss {
		if rs.Annotations["deployment.kubernetes.io/revision"] == rev {
			return rs
		}
	}
	return nil
}

// waitFor polls cond until it holds and returns its last description.
func waitFor(t *testing.T, what string, cond func() (bool, string)) string {
	t.Helper()
	return servertest.Eventually(t, what, pollTimeout, func(context.Context) (bool, string) { return cond() })
}

// waitDeployment polls the Deployment until ok holds.
func (c *cluster) waitDeployment(name, what string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	c.t.Helper()
	var d *appsv1.Deployment
	waitFor(c.t, name+" "+what, func() (bool, string) {
		var err error
		if d, err = c.client.AppsV1().Deployments(c.ns).Get(c.t.Context(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return ok(d), describe(d)
	})
	return d
}

// rolledOut is what `kubectl rollout status` waits for.
func rolledOut(d *appsv1.Deployment) bool {
	st := d.Status
	return d.Generation <= st.ObservedGeneration && st.UpdatedReplicas == *d.Spec.Replicas &&
		st.Replicas == st.UpdatedReplicas && st.AvailableReplicas == st.UpdatedReplicas
}

// waitRolledOut waits for the rollout to finish and for the Progressing
// condition to say so.
func (c *cluster) waitRolledOut(name string) *appsv1.Deployment {
	c.t.Helper()
	return c.waitDeployment(name, "rolled out", func(d *appsv1.Deployment) bool {
		p := condition(d, appsv1.DeploymentProgressing)
		return rolledOut(d) && p != nil && p.Reason == "NewReplicaSetAvailable"
	})
}

func condition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == typ {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func describe(d *appsv1.Deployment) string {
	st := d.Status
	s := fmt.Sprintf("gen %d/%d replicas %d updated %d ready %d available %d unavailable %d",
		st.ObservedGeneration, d.Generation, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas)
	for _, c := range st.Conditions {
		s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Reason)
	}
	return s
}

// events lists the messages of the Deployment's events with reason, in
// the order they were first recorded.
func (c *cluster) events(d *appsv1.Deployment, reason string) []string {
	c.t.Helper()
	list, err := c.client.CoreV1().Events(c.ns).List(c.t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=" + d.Name + ",reason=" + reason,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	var msgs []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == d.UID && e.Source.Component == "deployment-controller" {
			// client-go's recorder folds the tenth similar event and later
			// ones into one, as kube-controller-manager's does.
			msgs = append(msgs, strings.TrimPrefix(e.Message, "(combined from similar events): "))
		}
	}
	return msgs
}

// podWatch follows the namespace's pods through an informer and runs
// check on the live pods after every change, keeping the first failure.
type podWatch struct {
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	check  func([]*corev1.Pod) error
	armed  bool // the initial list has been seen
	failed error
}

func (c *cluster) watchPods(check func([]*corev1.Pod) error) *podWatch {
	c.t.Helper()
	w := &podWatch{pods: map[string]*corev1.Pod{}, check: check}
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns))
	informer := factory.Core().V1().Pods().Informer()
	set := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.observe(p.Name, p)
		}
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, cur any) { set(cur) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				_, name, _ := cache.SplitMetaNamespaceKey(key)
				w.observe(name, nil)
			}
		},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	factory.Start(c.t.Context().Done())
	if !cache.WaitForCacheSync(c.t.Context().Done(), reg.HasSynced) {
		c.t.Fatal("pod informer did not sync")
	}
	w.mu.Lock()
	w.armed = true
	w.mu.Unlock()
	w.observe("", nil)
	return w
}

func (w *podWatch) observe(name string, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p == nil || p.DeletionTimestamp != nil {
		delete(w.pods, name)
	} else {
		w.pods[name] = p
	}
	if w.failed != nil || !w.armed {
		return
	}
	var live []*corev1.Pod
	for _, p := range w.pods {
		live = append(live, p)
	}
	if err := w.check(live); err != nil {
		w.failed = err
	}
}

func (w *podWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// atLeastReady fails when fewer than n live pods are Ready.
func atLeastReady(n int) func([]*corev1.Pod) error {
	return func(pods []*corev1.Pod) error {
		ready := 0
		for _, p := range pods {
			if isReady(p) {
				ready++
			}
		}
		if ready < n {
			return fmt.Errorf("%d ready pods of %d, fewer than %d", ready, len(pods), n)
		}
		return nil
	}
}

// oneTemplate fails when live pods of two pod templates exist at once.
func oneTemplate(pods []*corev1.Pod) error {
	hashes := map[string]int{}
	for _, p := range pods {
		hashes[p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]++
	}
	if len(hashes) > 1 {
		return fmt.Errorf("pods of several templates at once: %v", hashes)
	}
	return nil
}
