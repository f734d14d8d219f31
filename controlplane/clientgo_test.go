package controlplane_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

func startServer(t *testing.T, edits ...func(*controlplane.Config)) (*servertest.Server, kubernetes.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration: starts etcd and the API server")
	}
	// The API server alone: no scheduler or controllers writing to the
	// objects these tests examine.
	s := servertest.StartWith(t, func(c *controlplane.Config) {
		c.DisableComponents = true
		for _, edit := range edits {
			edit(c)
		}
	})
	return s, s.Client()
}

func testPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func TestBootObjects(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		got, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		if got.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s phase %q", ns, got.Status.Phase)
		}
	}
	svc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.1" || svc.Spec.Ports[0].Port != 443 {
		t.Errorf("kubernetes service: clusterIP %s ports %v", svc.Spec.ClusterIP, svc.Spec.Ports)
	}
}

func TestPodCRUDWithProtobufClient(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")
	created, err := pods.Create(ctx, testPod("p1", map[string]string{"app": "a"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Generation != 1 {
		t.Errorf("server fields not set: %+v", created.ObjectMeta)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.SchedulerName != corev1.DefaultSchedulerName ||
		*created.Spec.TerminationGracePeriodSeconds != 30 || created.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent ||
		created.Status.Phase != corev1.PodPending || len(created.Spec.Tolerations) != 2 {
		t.Errorf("defaults not applied: %+v", created.Spec)
	}
	if _, err := pods.Create(ctx, testPod("p1", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: got %v, want AlreadyExists", err)
	}
	gen, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}, Spec: testPod("", nil).Spec}, metav1.CreateOptions{})
	if err != nil || len(gen.Name) != len("gen-")+5 {
		t.Fatalf("generateName: %v %q", err, gen.Name)
	}

	stale := created.DeepCopy()
	created.Spec.Containers[0].Image = "busybox:1.37"
	updated, err := pods.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale.Spec.Containers[0].Image = "busybox:1.38"
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: got %v, want Conflict", err)
	}
	// The scheduler may have written the pod's status meanwhile: start
	// from the current object so only the validation can refuse.
	if updated, err = pods.Get(ctx, "p1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	updated.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := pods.Update(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing restartPolicy: got %v, want Invalid", err)
	}

	patched, err := pods.Patch(ctx, "p1", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["x"] != "y" || patched.Labels["app"] != "a" {
		t.Fatalf("strategic patch: %v %v", err, patched.Labels)
	}
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unbound pod should be gone at once: %v", err)
	}
}

func TestValidationErrorsNameFields(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "c", Image: ""},
			{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 70000}}},
		}},
	}
	_, err := c.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 {
		t.Fatalf("got %v, want 422", err)
	}
	want := map[string]bool{"metadata.name": false, "spec.containers[0].image": false, "spec.containers[1].name": false, "spec.containers[1].ports[0].containerPort": false}
	for _, cause := range se.ErrStatus.Details.Causes {
		if _, ok := want[cause.Field]; ok {
			want[cause.Field] = true
		}
	}
	for f, seen := range want {
		if !seen {
			t.Errorf("no cause for field %s in %v", f, se.ErrStatus.Details.Causes)
		}
	}
	if _, err := c.CoreV1().Pods("nope").Create(ctx, testPod("p", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in missing namespace: got %v, want NotFound", err)
	}
	list, _ := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("a refused create left %d pods behind", len(list.Items))
	}
}

func TestListSelectorsAndPaging(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the service account controller (not running here) would make.
	if _, err := c.CoreV1().ServiceAccounts("other").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		p := testPod(name, map[string]string{"odd": map[bool]string{true: "yes", false: "no"}[i%2 == 0]})
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().Pods("other").Create(ctx, testPod("z", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	count := func(ns string, opts metav1.ListOptions) int {
		t.Helper()
		l, err := c.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	cases := []struct {
		ns   string
		opts metav1.ListOptions
		want int
	}{
		{"default", metav1.ListOptions{}, 5},
		{"", metav1.ListOptions{}, 6},
		{"default", metav1.ListOptions{LabelSelector: "odd=yes"}, 3},
		{"default", metav1.ListOptions{LabelSelector: "odd in (yes,no),odd!=no"}, 3},
		{"default", metav1.ListOptions{FieldSelector: "metadata.name=b"}, 1},
		{"", metav1.ListOptions{FieldSelector: "metadata.namespace=other"}, 1},
		{"", metav1.ListOptions{FieldSelector: "spec.nodeName="}, 6},
		{"", metav1.ListOptions{FieldSelector: "status.phase=Running"}, 0},
	}
	for _, tc := range cases {
		if got := count(tc.ns, tc.opts); got != tc.want {
			t.Errorf("list %q %+v: got %d, want %d", tc.ns, tc.opts, got, tc.want)
		}
	}
	if _, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field selector: got %v, want BadRequest", err)
	}

	var names []string
	opts := metav1.ListOptions{Limit: 2, LabelSelector: "odd=yes"}
	for pages := 0; ; pages++ {
		l, err := c.CoreV1().Pods("default").List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if l.Continue == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		opts.Continue = l.Continue
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "c" || names[2] != "e" {
		t.Errorf("paged filtered list: %v", names)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestExternalEtcd(t *testing.T) {
	endpoint := servertest.StartEtcd(t)
	s := servertest.StartWith(t, endpoint.External)
	c := s.Client()
	ctx := context.Background()
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ext"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "ext", metav1.GetOptions{}); err != nil {
		t.Fatalf("object kept in the external etcd: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Config.DataDir, "server", "etcd")); !os.IsNotExist(err) {
		t.Errorf("an embedded etcd ran although --etcd-servers was set: %v", err)
	}
}

// TestEndpointSlices drives discovery.k8s.io/v1 EndpointSlices through
// client-go: create with defaults, select by service name, watch, refuse
// bad input with the field named, delete.
func TestEndpointSlices(t *testing.T) {
	_, c := startServer(t)
	ctx := t.Context()
	slices := c.DiscoveryV1().EndpointSlices("default")
	w, err := slices.Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, svc := range []string{"web", "db"} {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{GenerateName: svc + "-", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Port: new(int32(8080))}},
		}
		created, err := slices.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := created.Ports[0]; p.Protocol == nil || *p.Protocol != "TCP" || p.Name == nil {
			t.Errorf("created port %+v, want defaults", p)
		}
	}
	list, err := slices.List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Labels[discoveryv1.LabelServiceName] != "web" {
		t.Fatalf("list by service name: %v, %+v", err, list)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*discoveryv1.EndpointSlice).Name != list.Items[0].Name {
		t.Errorf("watch event %v %T", ev.Type, ev.Object)
	}

	bad := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}}
	_, err = slices.Create(ctx, bad, metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 || len(se.ErrStatus.Details.Causes) != 1 ||
		se.ErrStatus.Details.Causes[0].Field != "endpoints[0].addresses[0]" {
		t.Fatalf("IPv6 address in an IPv4 slice: %v, want 422 on endpoints[0].addresses[0]", err)
	}
	if err := slices.Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted {
		t.Errorf("watch event %v after delete", ev.Type)
	}
}
