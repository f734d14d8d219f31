package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// The costs of the API machinery users extend the server with, measured
// against the skiff binary with its default flags from this process, one
// client, creates one after another.

func dynamicClient(b *testing.B, kubeconfig string) dynamic.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return dynamic.NewForConfigOrDie(cfg)
}

// measure runs op b.N times and reports its latencies and rate.
func measure(b *testing.B, what string, op func(i int) error) {
	var lat latencies
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	lat.report(b, what+"-")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), what+"s/s")
}

// payload is 1 KiB of data, the same in a ConfigMap and a custom resource.
var payload = strings.Repeat("x", 1024)

// BenchmarkCustomResourceCreate compares creating a custom resource of
// the widget CRD (a structural schema with a default and a CEL rule) with
// creating a ConfigMap carrying the same payload, both through the
// dynamic client.
func BenchmarkCustomResourceCreate(b *testing.B) {
	c := startCluster(b)
	c.mustIn(strings.Replace(widgetCRDYAML, "max: {type: integer}", "max: {type: integer}\n              note: {type: string}", 1), "apply", "-f", "-")
	c.must("wait", "--for", "condition=Established", "--timeout", "30s", "crd/widgets.example.com")
	dyn := dynamicClient(b, c.kubeconfig)
	kinds := []struct {
		name string
		gvr  schema.GroupVersionResource
		obj  func(i int) *unstructured.Unstructured
	}{
		{"configmap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, func(i int) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i)}, "data": map[string]any{"note": payload}}}
		}},
		{"customresource", schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, func(i int) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i)}, "spec": map[string]any{"size": int64(2), "max": int64(3), "note": payload}}}
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			client := dyn.Resource(k.gvr).Namespace("default")
			_ = client.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
			measure(b, "create", func(i int) error {
				_, err := client.Create(context.Background(), k.obj(i), metav1.CreateOptions{})
				return err
			})
		})
	}
}

// BenchmarkWebhookCreate measures what one validating webhook (on
// 127.0.0.1 in this process, answering at once) adds to a ConfigMap
// create.
func BenchmarkWebhookCreate(b *testing.B) {
	c := startCluster(b)
	client := fastClient(b, c.kubeconfig)
	var calls atomic.Int64
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer hook.Close()
	var seq atomic.Int64 // names stay unique across the runs of a sub-benchmark
	create := func(prefix string) func(int) error {
		return func(int) error {
			name := fmt.Sprintf("%s-%d", prefix, seq.Add(1))
			_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"note": payload}}, metav1.CreateOptions{})
			return err
		}
	}
	b.Run("without", func(b *testing.B) { measure(b, "create", create("plain")) })
	c.mustIn(fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bench}
webhooks:
- name: bench.e2e.skiff.test
  clientConfig: {url: "%s/", caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`, hook.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))), "apply", "-f", "-")
	probe := create("probe")
	for i := 0; calls.Load() == 0; i++ {
		if i == 200 {
			b.Fatal("the webhook was never called")
		}
		if err := probe(i); err != nil {
			b.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Run("one-webhook", func(b *testing.B) { measure(b, "create", create("hooked")) })
}

// BenchmarkApplyVsUpdate compares changing a ConfigMap by update with
// changing it by server-side apply.
func BenchmarkApplyVsUpdate(b *testing.B) {
	c := startCluster(b)
	client := fastClient(b, c.kubeconfig)
	cms := client.CoreV1().ConfigMaps("default")
	for _, name := range []string{"updated", "applied"} {
		if _, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"note": payload}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("update", func(b *testing.B) {
		cm, err := cms.Get(context.Background(), "updated", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		measure(b, "write", func(i int) error {
			cm.Data["i"] = fmt.Sprint(i)
			cm, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
			return err
		})
	})
	b.Run("apply", func(b *testing.B) {
		measure(b, "write", func(i int) error {
			patch := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"note":%q,"i":"%d"}}`, payload, i)
			_, err := cms.Patch(context.Background(), "applied", types.ApplyPatchType, []byte(patch), metav1.PatchOptions{FieldManager: "bench"})
			return err
		})
	})
}

// BenchmarkServerRSS100CRDs installs 100 CRDs (the size of a cluster with
// cert-manager, Argo CD and the Prometheus Operator) and reports the
// server's resident and anonymous memory before and after.
func BenchmarkServerRSS100CRDs(b *testing.B) {
	for range b.N {
		c := startCluster(b)
		pid := c.cmd.Process.Pid
		time.Sleep(5 * time.Second) // settled after start
		b.ReportMetric(rssMB(b, pid), "rss-before-MB")
		b.ReportMetric(statusMB(b, pid, "RssAnon:"), "anon-before-MB")
		var docs []string
		for i := range 100 {
			group := fmt.Sprintf("g%d.example.com", i)
			docs = append(docs, strings.NewReplacer("widgets.example.com", "widgets."+group, "group: example.com", "group: "+group).Replace(widgetCRDYAML))
		}
		c.mustIn(strings.Join(docs, "---\n"), "apply", "-f", "-")
		c.must("wait", "--for", "condition=Established", "--timeout", "120s", "crd", "--all")
		time.Sleep(5 * time.Second)
		b.ReportMetric(rssMB(b, pid), "rss-after-MB")
		b.ReportMetric(statusMB(b, pid, "RssAnon:"), "anon-after-MB")
		c.stop()
	}
}
