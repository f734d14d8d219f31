package main

import (
	"strings"
	"testing"
)

func TestCheckNodeLabels(t *testing.T) {
	for _, tt := range []struct {
		labels map[string]string
		want   string // "" passes
	}{
		{map[string]string{"team": "a", "example.com/x": "1", "node.kubernetes.io/instance-type": "small"}, ""},
		{map[string]string{"topology.kubernetes.io/zone": "z1", "kubelet.kubernetes.io/x": "1"}, ""},
		{map[string]string{"node-role.kubernetes.io/worker": ""}, "may not set node-role.kubernetes.io/worker on itself"},
		{map[string]string{"node-restriction.kubernetes.io/fast": "y"}, "may not set node-restriction.kubernetes.io/fast"},
		{map[string]string{"x.k8s.io/y": "1"}, "may not set x.k8s.io/y"},
	} {
		err := checkNodeLabels(tt.labels)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want %q", tt.labels, err, tt.want)
		}
	}
}
