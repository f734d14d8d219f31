package downward

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fieldPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"tier": "front", "app": "web"},
			Annotations: map[string]string{"note": "say \"hi\"\n", "example.com/Owner": "ops", "Example.com/team": "blue"},
		},
		Spec: v1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
		Status: v1.PodStatus{
			PodIPs:  []v1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}},
			HostIPs: []v1.HostIP{{IP: "192.168.1.2"}, {IP: "fd01::2"}},
		},
	}
}

func TestFieldValue(t *testing.T) {
	known := IPs{Pod: []string{"10.1.1.1", "fd00::1"}, Host: []string{"192.168.9.9"}}
	tests := []struct {
		name, path string
		ips        IPs
		want       string
	}{
		{"name", "metadata.name", IPs{}, "web"},
		{"namespace", "metadata.namespace", IPs{}, "shop"},
		{"uid", "metadata.uid", IPs{}, "uid-1"},
		{"labels sorted", "metadata.labels", IPs{}, "app=\"web\"\ntier=\"front\""},
		{"annotations escaped", "metadata.annotations", IPs{}, "Example.com/team=\"blue\"\nexample.com/Owner=\"ops\"\nnote=\"say \\\"hi\\\"\\n\""},
		{"one label", "metadata.labels['tier']", IPs{}, "front"},
		{"absent label", "metadata.labels['nope']", IPs{}, ""},
		{"one annotation, upper-case key", "metadata.annotations['example.com/Owner']", IPs{}, "ops"},
		{"annotation key checked lower-cased", "metadata.annotations['Example.com/team']", IPs{}, "blue"},
		{"nodeName", "spec.nodeName", IPs{}, "n1"},
		{"spec.host is nodeName", "spec.host", IPs{}, "n1"},
		{"serviceAccountName", "spec.serviceAccountName", IPs{}, "sa"},
		{"podIP from status", "status.podIP", IPs{}, "10.0.0.5"},
		{"podIPs from status", "status.podIPs", IPs{}, "10.0.0.5,fd00::5"},
		{"podIP passed in", "status.podIP", known, "10.1.1.1"},
		{"podIPs passed in", "status.podIPs", known, "10.1.1.1,fd00::1"},
		{"hostIP from status", "status.hostIP", IPs{}, "192.168.1.2"},
		{"hostIPs from status", "status.hostIPs", IPs{}, "192.168.1.2,fd01::2"},
		{"hostIP passed in", "status.hostIP", known, "192.168.9.9"},
		{"hostIPs passed in", "status.hostIPs", known, "192.168.9.9"},
		{"no pod IP yet", "status.podIP", IPs{Pod: []string{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FieldValue(fieldPod(), tt.path, tt.ips)
			if err != nil {
				t.Fatalf("FieldValue(%q): %v", tt.path, err)
			}
			if got != tt.want {
				t.Errorf("FieldValue(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestFieldValueEmptyMap(t *testing.T) {
	got, err := FieldValue(&v1.Pod{}, "metadata.labels", IPs{})
	if err != nil || got != "" {
		t.Errorf("FieldValue(no labels) = %q, %v; want \"\", nil", got, err)
	}
}

func TestFieldValueErrors(t *testing.T) {
	tests := []struct {
		name, path  string
		ips         IPs
		unsupported bool   // wraps ErrUnsupportedField
		message     string // the error message contains this
	}{
		{"unknown field", "spec.restartPolicy", IPs{}, true, "unsupported fieldPath: spec.restartPolicy"},
		{"status.phase is not served", "status.phase", IPs{}, true, "unsupported fieldPath: status.phase"},
		{"subscript on a plain field", "spec.nodeName['x']", IPs{}, true, "unsupported fieldPath: spec.nodeName['x']"},
		{"invalid label key", "metadata.labels['a b']", IPs{}, false, "invalid key subscript in metadata.labels['a b']"},
		{"label key checked as is", "metadata.labels['Example.com/team']", IPs{}, false, "invalid key subscript in metadata.labels['Example.com/team']"},
		{"invalid annotation key", "metadata.annotations['-x']", IPs{}, false, "invalid key subscript in metadata.annotations['-x']"},
		{"no host IP known", "status.hostIP", IPs{Host: []string{}}, false, "status.hostIP: no host IP known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FieldValue(fieldPod(), tt.path, tt.ips)
			if err == nil {
				t.Fatalf("FieldValue(%q) succeeded, want an error", tt.path)
			}
			if got := errors.Is(err, ErrUnsupportedField); got != tt.unsupported {
				t.Errorf("errors.Is(ErrUnsupportedField) = %v, want %v (%v)", got, tt.unsupported, err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not contain %q", err, tt.message)
			}
		})
	}
}

func TestSplitSubscript(t *testing.T) {
	tests := []struct {
		in, path, key string
		ok            bool
	}{
		{"metadata.labels['a']", "metadata.labels", "a", true},
		{"metadata.annotations['a[b]c']", "metadata.annotations", "a[b]c", true},
		{"metadata.labels['']", "metadata.labels", "", true},
		{"metadata.labels", "", "", false},
		{"['a']", "", "", false},
		{"metadata.labels[a]", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			path, key, ok := splitSubscript(tt.in)
			if path != tt.path || key != tt.key || ok != tt.ok {
				t.Errorf("splitSubscript(%q) = %q, %q, %v; want %q, %q, %v", tt.in, path, key, ok, tt.path, tt.key, tt.ok)
			}
		})
	}
}
