package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-lab/skiff/agent"
	"github.com/skiff-lab/skiff/podtrace"
	"github.com/skiff-lab/skiff/proxy"
)

// TestPrintExplanation: the timeline, the nodes' verdicts, JSON and YAML,
// and a refusal of another format.
func TestPrintExplanation(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	e := podtrace.Explain(pendingPod(), podtrace.Journey{Steps: []podtrace.Step{
		{Name: "apiserver.create", Component: "apiserver", Start: t0, End: t0.Add(4 * time.Millisecond)},
		{Name: "scheduler.schedule", Component: "scheduler", Start: t0.Add(5 * time.Millisecond), End: t0.Add(6 * time.Millisecond),
			Error: "0/1 nodes are available: 1 Insufficient cpu.", Attrs: map[string]string{podtrace.AttrWhyNot + "node-1": "NodeResourcesFit: Insufficient cpu"}},
	}})
	for _, c := range []struct {
		output string
		whyNot bool
		want   []string
	}{
		{"", false, []string{"Pod shop/big (uid u1)", "apiserver.create", "error: 0/1 nodes are available"}},
		{"", true, []string{"Pod shop/big is not scheduled.", "  node-1: NodeResourcesFit: Insufficient cpu\n"}},
		{"json", false, []string{`"kind": "PodExplanation"`, `"whyNot": {`, `"node-1": "NodeResourcesFit: Insufficient cpu"`}},
		{"yaml", false, []string{"kind: PodExplanation", "whyNot:\n  node-1: 'NodeResourcesFit: Insufficient cpu'"}},
	} {
		var out bytes.Buffer
		if err := printExplanation(&out, e, c.output, c.whyNot); err != nil {
			t.Fatalf("-o %q --why-not=%v: %v", c.output, c.whyNot, err)
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("-o %q --why-not=%v: no %q in\n%s", c.output, c.whyNot, want, out.String())
			}
		}
	}
	if err := printExplanation(&bytes.Buffer{}, e, "wide", false); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o wide: %v, want an error naming --output", err)
	}
}

func pendingPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "shop", UID: "u1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
}

// TestWorkloadPods: a Deployment's pods are those its ReplicaSets
// control, a Job's those it controls: not every pod its selector matches.
func TestWorkloadPods(t *testing.T) {
	labels := map[string]string{"app": "web"}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	two := int32(2)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "d1"},
		Spec:   appsv1.DeploymentSpec{Replicas: &two, Selector: selector},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 2}}
	owned := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "rs1", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"))}}}
	stray := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "shop", UID: "rs2", Labels: labels}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "shop", UID: "j1"},
		Spec: batchv1.JobSpec{Selector: selector}, Status: batchv1.JobStatus{Succeeded: 1}}
	pod := func(name string, owner metav1.Object, kind string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind(kind))}}}
	}
	c := fake.NewClientset(deploy, owned, stray, job,
		pod("web-1-b", owned, "ReplicaSet"), pod("web-1-a", owned, "ReplicaSet"), pod("other-x", stray, "ReplicaSet"), pod("once-z", job, "Job"))
	for _, tc := range []struct {
		kind, name, status string
		pods               []string
	}{
		{"deployment", "web", "1 of 2 ready, 2 up to date", []string{"web-1-a", "web-1-b"}},
		{"job", "once", "0 active, 1 succeeded, 0 failed", []string{"once-z"}},
	} {
		k := workloadKinds[slices.IndexFunc(workloadKinds, func(k workloadKind) bool { return k.name == tc.kind })]
		status, pods, err := workloadPods(context.Background(), c, k, "shop", tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		if status != tc.status || !slices.Equal(names, tc.pods) {
			t.Errorf("%s %s: %q %v, want %q %v", tc.kind, tc.name, status, names, tc.status, tc.pods)
		}
	}
	if _, _, err := workloadPods(context.Background(), c, workloadKinds[0], "shop", "nope"); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment that does not exist: %v, want NotFound", err)
	}
}

// TestWriteService: the endpoints, then per node whether its proxy's rules
// are made from the current slices, and its DNS answer; a node that could
// not be asked says why.
func TestWriteService(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	view := func(rv string) *proxy.ServiceView {
		return &proxy.ServiceView{Slices: map[string]string{"web-x": rv}, Synced: now.Add(-3 * time.Second),
			Ports: []proxy.PortView{{Name: "shop/web", Endpoints: []proxy.EndpointView{{Address: "10.244.0.5:8080", Ready: true}}}}}
	}
	dnsOK := agent.DNSAnswer{Name: "web.shop.svc.cluster.local", Addresses: []string{"10.96.0.20"}}
	e := serviceExplanation{Namespace: "shop", Name: "web", ClusterIP: "10.96.0.20", Ports: []string{"80/TCP→8080"},
		Slices:    map[string]string{"web-x": "12"},
		Endpoints: []endpointLine{{Address: "10.244.0.5:8080", Pod: "shop/web-1", Node: "node-a", Ready: true}},
		Nodes: []nodeLine{
			{NodeServiceView: agent.NodeServiceView{Node: "node-a", Proxy: view("12"), DNS: dnsOK}, Synced: true},
			{NodeServiceView: agent.NodeServiceView{Node: "node-b", Proxy: view("11"), DNS: agent.DNSAnswer{Name: "web.shop.svc.cluster.local", Error: "NXDOMAIN"}}},
			{NodeServiceView: agent.NodeServiceView{Node: "node-c"}, Error: "dial tcp: connection refused"},
		}}
	var out bytes.Buffer
	if err := writeService(&out, e, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Service shop/web: cluster IP 10.96.0.20, ports 80/TCP→8080\n",
		"10.244.0.5:8080  shop/web-1  node-a  true",
		"node-a  synced 3s ago, 1 ready endpoints in its rules ",
		"web.shop.svc.cluster.local → 10.96.0.20",
		"node-b  behind: rules from slices web-x@11, the API has web-x@12",
		"web.shop.svc.cluster.local: NXDOMAIN",
		"node-c  unknown: dial tcp: connection refused",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
