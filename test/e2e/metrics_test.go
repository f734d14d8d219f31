package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/test/nodetest"
)

// testMetrics: after a pod (testCrictl's), a Service and DNS queries, the
// API server's /metrics and the node's (through the API server's node
// proxy) name each component's key series; every metric docs/metrics.md
// lists and every metric the Grafana dashboard's expressions read is among
// them.
func testMetrics(t *testing.T, n *nodeCluster) {
	n.must("create", "service", "clusterip", "metrics-demo", "--tcp", "80:8080")
	n.must("exec", "crictl-demo", "--", "nslookup", "metrics-demo.default.svc.cluster.local", nodetest.ClusterDNS)
	n.must("create", "deployment", "metrics-demo", "--image", e2eImage, "--replicas", "0")
	server := n.must("get", "--raw", "/metrics")
	node := n.must("get", "--raw", "/api/v1/nodes/"+n.nodeName+"/proxy/metrics")
	for endpoint, series := range map[string][]string{
		server: {`apiserver_request_total{`, `etcd_server_has_leader `, `etcd_mvcc_db_total_size_in_bytes `,
			`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} `, `scheduler_pending_pods{queue="active"} `,
			`workqueue_adds_total{name="deployment"} `, `leader_election_master_status{name="skiff-controlplane"} 1`,
			`rest_client_requests_total{`, `go_goroutines `, `process_resident_memory_bytes `,
			`skiff_pod_journey_step_duration_seconds_count{node="` + n.nodeName + `",step="agent.sandbox"} `},
		node: {`kubelet_running_pods `, `kubelet_pod_start_duration_seconds_count `, `kubelet_started_containers_total{container_type="container"} `,
			`kubelet_pleg_relist_duration_seconds_count `, `kubeproxy_sync_proxy_rules_duration_seconds_count{kind="full"} `,
			`coredns_dns_requests_total{`, `workqueue_depth{name="agent_pods"} `},
	} {
		for _, s := range series {
			if !strings.Contains(endpoint, "\n"+s) {
				t.Errorf("no %s… in /metrics", s)
			}
		}
	}
	names := metricNames(server + node)
	for _, name := range documentedMetrics(t) {
		if !names[name] {
			t.Errorf("docs/metrics.md lists %s, which no /metrics serves", name)
		}
	}
	for _, name := range dashboardMetrics(t) {
		if !names[name] {
			t.Errorf("the Grafana dashboard reads %s, which no /metrics serves", name)
		}
	}
}

// metricNames are the family names (from # TYPE) and the sample names
// (histograms' _bucket, _sum and _count) of an exposition.
func metricNames(exposition string) map[string]bool {
	names := map[string]bool{}
	for line := range strings.Lines(exposition) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names[strings.Fields(rest)[0]] = true
		} else if line != "" && line[0] != '#' {
			names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	return names
}

// documentedMetrics are the names in the first column of docs/metrics.md's
// tables.
func documentedMetrics(t *testing.T) []string {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_:]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if len(out) < 30 {
		t.Fatalf("docs/metrics.md lists %d metrics", len(out))
	}
	return out
}

// dashboardMetrics are the metric names the dashboard's expressions read.
// It also checks that the file is a dashboard Grafana imports: one
// Prometheus data source input, and panels with a place and queries.
func dashboardMetrics(t *testing.T) []string {
	b, err := os.ReadFile("../../docs/grafana/skiff-cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Inputs []struct{ Name, Type, PluginID string } `json:"__inputs"`
		Title  string
		UID    string
		Panels []struct {
			Title   string
			Type    string
			GridPos *struct{ H, W, X, Y int }
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].PluginID != "prometheus" || dash.Title == "" || dash.UID == "" {
		t.Errorf("dashboard: inputs %+v, title %q, uid %q", dash.Inputs, dash.Title, dash.UID)
	}
	var out []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if p.GridPos == nil || len(p.Targets) == 0 {
			t.Errorf("panel %q: no gridPos or no targets", p.Title)
		}
		for _, target := range p.Targets {
			out = append(out, promQLMetrics(target.Expr)...)
		}
	}
	return out
}

// promQLMetrics are the metric names of a PromQL expression: its
// identifiers less functions, keywords, label matchers and groupings,
// durations, offsets and strings.
func promQLMetrics(expr string) []string {
	for _, strip := range []string{`"[^"]*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`, `\boffset\s+\w+`} {
		expr = regexp.MustCompile(strip).ReplaceAllString(expr, " ")
	}
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
	var out []string
	for _, m := range regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\(?)`).FindAllStringSubmatch(expr, -1) {
		if m[2] == "" && !keywords[strings.ToLower(m[1])] {
			out = append(out, m[1])
		}
	}
	return out
}

func TestPromQLMetrics(t *testing.T) {
	expr := `histogram_quantile(0.99, sum by (le, verb) (rate(apiserver_request_duration_seconds_bucket{verb!="WATCH"}[5m]))) ` +
		`/ on (instance) group_left max without (job) (up offset 1h) and time() - kubeproxy_sync_proxy_rules_last_timestamp_seconds > bool 60`
	got := strings.Join(promQLMetrics(expr), " ")
	if want := "apiserver_request_duration_seconds_bucket up kubeproxy_sync_proxy_rules_last_timestamp_seconds"; got != want {
		t.Errorf("promQLMetrics: %q, want %q", got, want)
	}
}
