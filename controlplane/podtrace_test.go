package controlplane_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/podtrace"
)

// TestPodJourney: a pod's create request, admission, etcd write and the
// scheduler's decision and binding are steps of one trace, whose context
// the pod's annotation carries; a node continues it through /v1/traces;
// pods/explain serves the journey under RBAC; a pod no node takes shows
// each node's reasons; the spans also reach the OTLP collector of
// --tracing-endpoint (a receiver on 127.0.0.1).
func TestPodJourney(t *testing.T) {
	collected := podtrace.NewStore(10)
	collector := httptest.NewServer(podtrace.Receiver{Store: collected})
	defer collector.Close()
	s := servertest.StartWith(t, func(cfg *controlplane.Config) { cfg.Tracing.Endpoint = collector.URL + podtrace.ReportPath })
	admin := s.Client()
	ctx := context.Background()
	pod := scheduledOnJourneyNodes(t, admin, "fits")
	tp := pod.Annotations[podtrace.Annotation]
	if !strings.HasPrefix(tp, "00-") || !strings.HasSuffix(tp, "-01") {
		t.Fatalf("annotation %s = %q, want a sampled W3C traceparent", podtrace.Annotation, tp)
	}

	// The node reports a step as an agent does.
	reportAgentStep(t, s.UserConfig("system:node:node-a", "system:nodes"), pod)

	var e podtrace.Explanation
	servertest.Eventually(t, "the journey of fits", 30*time.Second, func(ctx context.Context) (bool, string) {
		e = explain(t, admin, "fits")
		return len(e.StepNames()) >= 8, strings.Join(e.StepNames(), " ")
	})
	if !strings.Contains(tp, e.TraceID) {
		t.Errorf("journey trace %s is not the annotation's %s", e.TraceID, tp)
	}
	create := findStep(t, e, "apiserver.create")
	if create.Attrs["user"] == "" || create.Attrs["resourceVersion"] == "" {
		t.Errorf("apiserver.create attributes %v lack the user or the resourceVersion", create.Attrs)
	}
	if !strings.Contains(create.Attrs["admission.mutated"], "ServiceAccount: ") {
		t.Errorf("admission.mutated = %q, want the ServiceAccount plugin's changes", create.Attrs["admission.mutated"])
	}
	for _, name := range []string{"apiserver.admission", "apiserver.validation", "etcd.write", "scheduler.queue", "scheduler.bind", "agent.sandbox"} {
		findStep(t, e, name)
	}
	if w := findStep(t, e, "etcd.write"); w.Component != "etcd" || w.Attrs["revision"] == "" {
		t.Errorf("etcd.write = %+v, want component etcd and a revision", w)
	}
	if sch := findStep(t, e, "scheduler.schedule"); sch.Attrs["feasible"] != "2" || sch.Attrs["node"] == "" {
		t.Errorf("scheduler.schedule attributes %v, want 2 feasible nodes and the node", sch.Attrs)
	}

	huge := createCPUPod(t, admin, "huge", "6")
	servertest.Eventually(t, "why huge is not scheduled", 30*time.Second, func(ctx context.Context) (bool, string) {
		e = explain(t, admin, "huge")
		return len(e.WhyNot) == 2 && e.Unschedulable != "", e.Unschedulable
	})
	fits, err := admin.CoreV1().Pods("default").Get(ctx, "fits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"node-a", "node-b"} {
		free := "4"
		if node == fits.Spec.NodeName {
			free = "3"
		}
		if want := "NodeResourcesFit: Insufficient cpu (cpu: requested 6, free " + free + ")"; e.WhyNot[node] != want {
			t.Errorf("why not %s: %q, want %q", node, e.WhyNot[node], want)
		}
	}
	if !strings.HasPrefix(e.Unschedulable, "0/2 nodes are available") || huge.Annotations[podtrace.Annotation] == "" {
		t.Errorf("unschedulable %q (annotation %q)", e.Unschedulable, huge.Annotations[podtrace.Annotation])
	}

	checkExplainRBAC(t, s, admin)
	servertest.Eventually(t, "the collector has the create and the binding", 30*time.Second, func(context.Context) (bool, string) {
		j, _ := collected.Get(string(pod.UID))
		names := strings.Join(j.StepNames(), " ")
		return strings.Contains(names, "apiserver.create") && strings.Contains(names, "scheduler.bind"), names
	})
}

// checkExplainRBAC: pods/explain is refused to a user without a role, and
// served to one with view; a user who is not a node may not report steps.
func checkExplainRBAC(t *testing.T, s *servertest.Server, admin kubernetes.Interface) {
	ctx := context.Background()
	alice := kubernetes.NewForConfigOrDie(s.UserConfig("alice"))
	_, err := alice.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("fits").SubResource("explain").DoRaw(ctx)
	if !apierrors.IsForbidden(err) {
		t.Errorf("explain without a role: %v, want Forbidden", err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "alice may explain", 10*time.Second, func(ctx context.Context) (bool, string) {
		_, err := alice.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("fits").SubResource("explain").DoRaw(ctx)
		return err == nil, errString(err)
	})
	err = alice.CoreV1().RESTClient().Post().AbsPath(podtrace.ReportPath).SetHeader("Content-Type", "application/x-protobuf").Body([]byte{}).Do(ctx).Error()
	if !apierrors.IsForbidden(err) {
		t.Errorf("a report from a user who is not a node: %v, want Forbidden", err)
	}
}

// journeyNode is a Ready node with 4 CPUs and no agent (as backoff_test's
// readyTestNode, which the internal tests have).
// scheduledOnJourneyNodes makes the nodes node-a and node-b, and a pod
// the scheduler puts on one; it returns the pod as created.
func scheduledOnJourneyNodes(t *testing.T, admin kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	for _, node := range []string{"node-a", "node-b"} {
		if _, err := admin.CoreV1().Nodes().Create(context.Background(), journeyNode(node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := createCPUPod(t, admin, name, "1")
	servertest.Eventually(t, "pod "+name+" scheduled", 30*time.Second, func(ctx context.Context) (bool, string) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", "not yet"
	})
	return pod
}

func journeyNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func createCPUPod(t *testing.T, c kubernetes.Interface, name, cpu string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	created, err := c.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// reportAgentStep sends one step of pod's journey to the server the way
// an agent does: OTLP/HTTP with the node's credentials.
func reportAgentStep(t *testing.T, node *rest.Config, pod *corev1.Pod) {
	t.Helper()
	client, err := rest.HTTPClientFor(node)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := podtrace.NewProvider(podtrace.Options{Service: "skiff-agent",
		Exports: []podtrace.Export{{URL: node.Host + podtrace.ReportPath, Client: client}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	podtrace.NewTracer(tp, "agent", "node-a").Step(pod, "agent.sandbox", now, now.Add(time.Millisecond), nil, attribute.String("ip", "10.244.0.9"))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("report to %s: %v", podtrace.ReportPath, err)
	}
}

func explain(t *testing.T, c kubernetes.Interface, name string) podtrace.Explanation {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name(name).SubResource("explain").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var e podtrace.Explanation
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func findStep(t *testing.T, e podtrace.Explanation, name string) podtrace.Step {
	t.Helper()
	for _, s := range e.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Errorf("no step %s in %v", name, e.StepNames())
	return podtrace.Step{}
}
