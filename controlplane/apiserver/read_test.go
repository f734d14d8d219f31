package apiserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
)

// selectorFor parses the selectors of a list request with query q.
func selectorFor(t *testing.T, res *registry.Resource, q url.Values) (selector, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?"+q.Encode(), nil)
	return parseSelector(r, res)
}

func labeledPod(name string, labels map[string]string, node string) *corev1.Pod {
	pod := apitest.NewPod(nil)
	pod.Name, pod.Labels, pod.Spec.NodeName = name, labels, node
	pod.Status.Phase = corev1.PodRunning
	return pod
}

func TestParseSelector(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	nodes := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Node"))
	tests := []struct {
		name    string
		res     *registry.Resource
		query   url.Values
		badReq  bool
		matches map[string]bool // pod name → match, over testPods
	}{
		{"everything", pods, url.Values{}, false, map[string]bool{"a": true, "b": true, "c": true}},
		{"label equality", pods, url.Values{"labelSelector": {"app=web"}}, false, map[string]bool{"a": true, "b": true, "c": false}},
		{"label set", pods, url.Values{"labelSelector": {"app=web,tier in (front)"}}, false, map[string]bool{"a": true, "b": false, "c": false}},
		{"label absent", pods, url.Values{"labelSelector": {"!tier"}}, false, map[string]bool{"a": false, "b": true, "c": true}},
		{"field nodeName", pods, url.Values{"fieldSelector": {"spec.nodeName=n1"}}, false, map[string]bool{"a": true, "b": false, "c": true}},
		{"field and label", pods, url.Values{"fieldSelector": {"spec.nodeName=n1,metadata.namespace=default"}, "labelSelector": {"app"}},
			false, map[string]bool{"a": true, "b": false, "c": false}},
		{"field name not equal", pods, url.Values{"fieldSelector": {"metadata.name!=a"}}, false, map[string]bool{"a": false, "b": true, "c": true}},
		{"field phase", pods, url.Values{"fieldSelector": {"status.phase=Running"}}, false, map[string]bool{"a": true, "b": true, "c": true}},
		{"bad label syntax", pods, url.Values{"labelSelector": {"app in (web"}}, true, nil},
		{"bad field syntax", pods, url.Values{"fieldSelector": {"spec.nodeName"}}, true, nil},
		{"unknown field", pods, url.Values{"fieldSelector": {"spec.bogus=x"}}, true, nil},
		{"namespace field on a cluster resource", nodes, url.Values{"fieldSelector": {"metadata.namespace=default"}}, true, nil},
		{"node field", nodes, url.Values{"fieldSelector": {"spec.unschedulable=false"}}, false, nil},
	}
	testPods := map[string]*corev1.Pod{
		"a": labeledPod("a", map[string]string{"app": "web", "tier": "front"}, "n1"),
		"b": labeledPod("b", map[string]string{"app": "web"}, "n2"),
		"c": labeledPod("c", map[string]string{"app2": "db"}, "n1"),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := selectorFor(t, tt.res, tt.query)
			if apitest.BadRequestCase(t, err, tt.badReq) {
				return
			}
			for name, want := range tt.matches {
				if got := sel.matches(testPods[name]); got != want {
					t.Errorf("matches(%s) = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestListOptions(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	tests := []struct {
		query    string
		badReq   bool
		limit    int64
		revision int64
		match    bool
	}{
		{"", false, 0, 0, false},
		{"limit=5&continue=abc", false, 5, 0, false},
		{"labelSelector=app%3Dweb", false, 0, 0, true},
		{"resourceVersion=7&resourceVersionMatch=Exact", false, 0, 7, false},
		{"resourceVersion=7&resourceVersionMatch=NotOlderThan", false, 0, 0, false},
		{"resourceVersionMatch=Exact", true, 0, 0, false},
		{"resourceVersionMatch=Sometimes", true, 0, 0, false},
		{"limit=-1", true, 0, 0, false},
		{"limit=x", true, 0, 0, false},
		{"resourceVersion=abc", true, 0, 0, false},
		{"continue=abc&resourceVersion=5", true, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?"+tt.query, nil)
			sel, err := parseSelector(r, pods)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := listOptions(r, sel)
			if tt.badReq {
				apitest.BadRequestCase(t, err, true)
				return
			}
			if err != nil || opts.Limit != tt.limit || opts.Revision != tt.revision || (opts.Match != nil) != tt.match {
				t.Errorf("listOptions = %+v, %v; want limit %d revision %d match %v", opts, err, tt.limit, tt.revision, tt.match)
			}
		})
	}
}
