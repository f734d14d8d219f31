package controlplane_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// rawClient sends requests as the admin over the admin kubeconfig's TLS.
type rawClient struct {
	t    *testing.T
	base string
	http *http.Client
}

func newRawClient(t *testing.T, s *servertest.Server) *rawClient {
	cfg := s.RESTConfig()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{t: t, base: cfg.Host, http: hc}
}

func (c *rawClient) do(method, path, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func statusOf(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %s", data)
	}
	return st
}

func TestBadInputGetsStatusAndWritesNothing(t *testing.T) {
	s, c := startServer(t)
	raw := newRawClient(t, s)
	pods := "/api/v1/namespaces/default/pods"
	cases := []struct {
		name, method, path, ctype, body string
		code                            int
		message                         string
	}{
		{"malformed json", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod",`, 400, ""},
		{"malformed yaml", "POST", pods, "application/yaml", "apiVersion: v1\nkind: Pod\nmetadata: [", 400, ""},
		{"malformed protobuf", "POST", pods, "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\xff\xff", 400, ""},
		{"wrong kind", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}`, 400, "kind"},
		{"wrong version", "POST", pods, "application/json", `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"x"}}`, 400, "API version"},
		{"namespace mismatch", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"kube-system"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "namespace"},
		{"unknown field strict", "POST", pods + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"bogus":1,"containers":[{"name":"c","image":"i"}]}}`, 400, `unknown field "spec.bogus"`},
		{"duplicate field strict", "POST", pods + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","name":"y"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "duplicate field"},
		{"invalid name", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"UPPER"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 422, "metadata.name"},
		{"unsupported media type", "POST", pods, "text/plain", "hello", 415, ""},
		{"apply without a field manager", "PATCH", pods + "/x", "application/apply-patch+yaml", "metadata: {}", 400, "fieldManager"},
		{"apply of another kind", "PATCH", pods + "/x?fieldManager=m", "application/apply-patch+yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}", 400, "apply patch"},
		{"unknown resource", "GET", "/api/v1/namespaces/default/widgets", "", "", 404, ""},
		{"unknown group", "GET", "/apis/nope.io/v1/things", "", "", 404, ""},
		{"huge body", "POST", pods, "application/json", `{"x":"` + strings.Repeat("a", 4<<20) + `"}`, 413, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := raw.do(tc.method, tc.path, tc.ctype, []byte(tc.body))
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, data)
			}
			if st := statusOf(t, data); !strings.Contains(st.Message, tc.message) || st.Code != int32(tc.code) {
				t.Errorf("status %+v, want message containing %q", st, tc.message)
			}
		})
	}
	list, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("bad input left pods behind: %v %d", err, len(list.Items))
	}
	// Warn (the default) accepts the object and says what it dropped.
	resp, data := raw.do("POST", pods, "application/json",
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"warned"},"spec":{"bogus":1,"containers":[{"name":"c","image":"i"}]}}`))
	if resp.StatusCode != 201 || !strings.Contains(resp.Header.Get("Warning"), "spec.bogus") {
		t.Fatalf("warn: code %d warning %q: %s", resp.StatusCode, resp.Header.Get("Warning"), data)
	}
}

func TestAuthentication(t *testing.T) {
	s, _ := startServer(t)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := s.RESTConfig().Host
	get := func(path string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
		if code := get(p); code != 200 {
			t.Errorf("anonymous %s: %d, want 200", p, code)
		}
	}
	// system:anonymous gets what RBAC gives system:unauthenticated: not
	// discovery, resources or metrics.
	for _, p := range []string{"/api", "/api/v1/namespaces", "/metrics"} {
		if code := get(p); code != 403 {
			t.Errorf("anonymous %s: %d, want 403", p, code)
		}
	}
	if code := get("/api", "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("bad token: %d, want 401", code)
	}

	// A client certificate from another CA is not a cluster identity.
	foreign, err := pki.LoadOrCreateCA(t.TempDir(), "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := foreign.Issue("skiff-admin", []string{"system:masters"}, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	insecure.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}}}
	if code := get("/api/v1/namespaces"); code != 401 {
		t.Errorf("foreign client certificate: %d, want 401", code)
	}
}

func TestTokenAuthFile(t *testing.T) {
	s := servertest.Start(t)
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("s3cret,alice,1001,\"dev,ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Config.TokenAuthFile = file
	s.Restart()
	cfg := rest.AnonymousClientConfig(s.RESTConfig())
	cfg.BearerToken = "s3cret"
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Discovery, which RBAC gives every authenticated user.
	resp, err := hc.Get(cfg.Host + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("token user: %d, want 200", resp.StatusCode)
	}
}

func TestServiceAllocation(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	svcs := c.CoreV1().Services("default")
	svc := func(name string, typ corev1.ServiceType, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: ip, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80}},
		}}
	}
	np, err := svcs.Create(ctx, svc("np", corev1.ServiceTypeNodePort, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(np.Spec.ClusterIP, "10.96.") || np.Spec.Ports[0].NodePort < 30000 || np.Spec.Ports[0].NodePort > 32767 ||
		np.Spec.Ports[0].TargetPort.IntValue() != 80 {
		t.Fatalf("allocation: %+v", np.Spec)
	}
	if _, err := svcs.Create(ctx, svc("dup", corev1.ServiceTypeClusterIP, np.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate clusterIP: got %v, want Invalid", err)
	}
	if _, err := svcs.Create(ctx, svc("out", corev1.ServiceTypeClusterIP, "192.168.0.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("clusterIP out of range: got %v, want Invalid", err)
	}
	s.Restart()
	if _, err := svcs.Create(ctx, svc("dup2", corev1.ServiceTypeClusterIP, np.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate clusterIP after restart: got %v, want Invalid", err)
	}
	if err := svcs.Delete(ctx, "np", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := svc("again", corev1.ServiceTypeNodePort, np.Spec.ClusterIP)
	again.Spec.Ports[0].NodePort = np.Spec.Ports[0].NodePort
	if _, err := svcs.Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatalf("released IP and port should be free again: %v", err)
	}
}

func TestTableOutput(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	if _, err := c.CoreV1().Pods("default").Create(ctx, testPod("tp", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := newRawClient(t, s)
	resp, data := raw.do("GET", "/api/v1/namespaces/default/pods", "", nil,
		"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil || table.Kind != "Table" {
		t.Fatalf("not a table: %s", data)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if strings.Join(cols, ",") != "Name,Ready,Status,Restarts,Age" || len(table.Rows) != 1 {
		t.Fatalf("columns %v rows %d", cols, len(table.Rows))
	}
	row := table.Rows[0]
	if row.Cells[0] != "tp" || row.Cells[1] != "0/1" || row.Cells[2] != "Pending" || row.Cells[3] != "0" {
		t.Errorf("cells %v", row.Cells)
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(row.Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Namespace != "default" {
		t.Errorf("row object %s", row.Object.Raw)
	}
}

// TestMetrics: a pod's create is counted and timed on /metrics. The
// metrics are the process's, shared by the servers of other tests that ran
// in it: counts are compared before and after.
func TestMetrics(t *testing.T) {
	s, c := startServer(t)
	raw := newRawClient(t, s)
	series := []string{
		`apiserver_request_total{code="201",resource="pods",subresource="",verb="create"}`,
		`apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="create",le="+Inf"}`,
	}
	scrape := func() []float64 {
		resp, data := raw.do("GET", "/metrics", "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("metrics: %d", resp.StatusCode)
		}
		out := make([]float64, len(series))
		for i, name := range series {
			for line := range strings.Lines(string(data)) {
				if v, ok := strings.CutPrefix(line, name+" "); ok {
					out[i], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
				}
			}
		}
		return out
	}
	before := scrape()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), testPod("m", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	after := scrape()
	for i, name := range series {
		if after[i] != before[i]+1 {
			t.Errorf("%s went from %v to %v, want one more", name, before[i], after[i])
		}
	}
}

// TestHealthChecks: /readyz, /livez and /healthz list their checks with
// ?verbose, leave some out with ?exclude, and answer each check alone at
// /readyz/NAME (to system:monitoring's members, not to anonymous users).
func TestHealthChecks(t *testing.T) {
	s := servertest.Start(t)
	raw := func(c kubernetes.Interface, target string) (string, error) {
		path, query, _ := strings.Cut(target, "?")
		req := c.Discovery().RESTClient().Get().AbsPath(path)
		for _, kv := range strings.Split(query, "&") {
			if k, v, _ := strings.Cut(kv, "="); k != "" {
				req = req.Param(k, v)
			}
		}
		out, err := req.DoRaw(context.Background())
		return string(out), err
	}
	ready, err := raw(s.Client(), "/readyz?verbose")
	for _, check := range []string{"[+]ping ok", "[+]etcd ok", "[+]etcd-readiness ok", "[+]informer-sync ok",
		"[+]poststarthook/rbac/bootstrap-roles ok", "readyz check passed"} {
		if err != nil || !strings.Contains(ready, check) {
			t.Errorf("/readyz?verbose: %v\n%s\nwant %q", err, ready, check)
		}
	}
	if live, err := raw(s.Client(), "/livez?verbose&exclude=log"); err != nil || !strings.Contains(live, "[+]etcd ok") ||
		!strings.Contains(live, "[+]log excluded: ok") || strings.Contains(live, "informer-sync") {
		t.Errorf("/livez?verbose&exclude=log: %v\n%s", err, live)
	}
	if one, err := raw(s.Client(), "/readyz/etcd"); err != nil || one != "ok" {
		t.Errorf("/readyz/etcd: %q %v", one, err)
	}
	anonymous := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(s.RESTConfig()))
	if _, err := raw(anonymous, "/readyz/etcd"); !apierrors.IsForbidden(err) {
		t.Errorf("anonymous /readyz/etcd: %v, want 403", err)
	}
	if out, err := raw(anonymous, "/readyz"); err != nil || out != "ok" {
		t.Errorf("anonymous /readyz: %q %v", out, err)
	}
}
