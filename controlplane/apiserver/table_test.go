package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestTableRowsMatchColumns(t *testing.T) {
	s := newTestServer(t)
	for _, r := range s.resources {
		t.Run(r.Plural, func(t *testing.T) {
			obj := r.NewObj()
			m := registry.ObjectMeta(obj)
			m.Name, m.CreationTimestamp = "obj", metav1.NewTime(time.Now().Add(-time.Hour))
			r.Strategy.PrepareForCreate(obj)
			cols, cells := r.Strategy.Columns(), r.Strategy.Row(obj)
			if len(cells) != len(cols) {
				t.Fatalf("%d cells for %d columns: %v", len(cells), len(cols), cells)
			}
			names := 0
			for i, c := range cols {
				switch cells[i].(type) {
				case string, int64, bool:
				default:
					t.Errorf("cell %q is a %T, want string, int64 or bool", c.Name, cells[i])
				}
				if c.Format == "name" {
					names++
					if cells[i] != "obj" {
						t.Errorf("name cell = %v", cells[i])
					}
				}
				if c.Name == "Age" && cells[i] != "60m" {
					t.Errorf("age cell = %v, want 60m", cells[i])
				}
			}
			if names != 1 {
				t.Errorf("%d name columns, want 1", names)
			}
		})
	}
}

func TestNodeRow(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}
	tests := []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		labels        map[string]string
		status, roles string
	}{
		{"no conditions", nil, false, nil, "Unknown", "<none>"},
		{"ready worker", []corev1.NodeCondition{ready}, false, map[string]string{"node-role.kubernetes.io/worker": ""}, "Ready", "worker"},
		{"cordoned control plane", []corev1.NodeCondition{ready}, true,
			map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "true", "kubernetes.io/hostname": "n1"},
			"Ready,SchedulingDisabled", "control-plane,etcd"},
		{"not ready, legacy role label", []corev1.NodeCondition{notReady}, false, map[string]string{"kubernetes.io/role": "master"}, "NotReady", "master"},
		{"empty role suffix ignored", []corev1.NodeCondition{ready}, false, map[string]string{"node-role.kubernetes.io/": "x"}, "Ready", "<none>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tt.unschedulable}, Status: corev1.NodeStatus{Conditions: tt.conditions}}
			node.Name, node.Labels = "n1", tt.labels
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.5"}}
			cells := registry.NodeStrategy{}.Row(node)
			if cells[1] != tt.status || cells[2] != tt.roles {
				t.Errorf("status %v roles %v, want %s %s", cells[1], cells[2], tt.status, tt.roles)
			}
			if cells[5] != "192.168.1.5" || cells[6] != "<none>" || cells[7] != "<unknown>" {
				t.Errorf("wide cells = %v", cells[5:])
			}
		})
	}
}

func TestEndpointsCell(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, len(ips))
		for i, ip := range ips {
			out[i].IP = ip
		}
		return out
	}
	port := func(p int32) []corev1.EndpointPort { return []corev1.EndpointPort{{Port: p}} }
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"no subsets", nil, "<none>"},
		{"only not-ready addresses", []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.1"), Ports: port(80)}}, "<none>"},
		{"address without ports", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1")}}, "10.0.0.1"},
		{"three", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: port(80)}},
			"10.0.0.1:80,10.0.0.2:80,10.0.0.3:80"},
		{"five across subsets", []corev1.EndpointSubset{
			{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: port(80)},
			{Addresses: addrs("10.0.1.1", "10.0.1.2", "10.0.1.3"), Ports: port(8080)},
		}, "10.0.0.1:80,10.0.0.2:80,10.0.1.1:8080 + 2 more..."},
		{"IPv6", []corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: port(443)}}, "[fd00::1]:443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{Subsets: tt.subsets}
			if got := (registry.EndpointsStrategy{}).Row(ep)[1]; got != tt.want {
				t.Errorf("endpoints cell = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventRow(t *testing.T) {
	tenMin := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	twoMin := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	tests := []struct {
		name                     string
		ev                       corev1.Event
		lastSeen, object, source string
		firstSeen                string
		count                    int64
	}{
		{"count 0 shows 1", corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"}, FirstTimestamp: tenMin,
			Source: corev1.EventSource{Component: "kubelet", Host: "n1"}},
			"10m", "pod/web", "kubelet, n1", "10m", 1},
		{"last seen and count", corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "api"}, FirstTimestamp: tenMin,
			LastTimestamp: twoMin, Count: 4, ReportingController: "deployment-controller"},
			"2m", "deployment/api", "deployment-controller", "10m", 4},
		{"series", corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node"}, EventTime: metav1.NewMicroTime(tenMin.Time),
			Series:              &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(twoMin.Time)},
			ReportingController: "node-controller", ReportingInstance: "n2"},
			"2m", "node", "node-controller, n2", "10m", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := registry.EventStrategy{}.Row(&tt.ev)
			if cells[0] != tt.lastSeen || cells[3] != tt.object || cells[5] != tt.source || cells[7] != tt.firstSeen || cells[8] != tt.count {
				t.Errorf("cells = %q, want last seen %s object %s source %q first seen %s count %d",
					cells, tt.lastSeen, tt.object, tt.source, tt.firstSeen, tt.count)
			}
		})
	}
}

func TestTableIncludeObject(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	pod := createdPod(nil)
	tests := []struct {
		include string
		kind    string // the kind of the row object; "" for none
		badReq  bool
	}{
		{"", "PartialObjectMetadata", false},
		{"Metadata", "PartialObjectMetadata", false},
		{"Object", "Pod", false},
		{"None", "", false},
		{"Everything", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.include, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?includeObject="+tt.include, nil)
			table, err := s.table(r, pods, []runtime.Object{pod.DeepCopy()}, true)
			if apitest.BadRequestCase(t, err, tt.badReq) {
				return
			}
			if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" || len(table.ColumnDefinitions) != 9 || len(table.Rows) != 1 {
				t.Fatalf("table = %+v", table)
			}
			raw := table.Rows[0].Object.Raw
			if tt.kind == "" {
				if raw != nil {
					t.Errorf("row object = %s, want none", raw)
				}
				return
			}
			var meta metav1.TypeMeta
			if err := json.Unmarshal(raw, &meta); err != nil || meta.Kind != tt.kind {
				t.Errorf("row object kind = %q (%v), want %s", meta.Kind, err, tt.kind)
			}
		})
	}
}
