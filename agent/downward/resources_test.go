package downward

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func resourcePod() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{
		Containers: []v1.Container{
			{Name: "app", Resources: v1.ResourceRequirements{
				Requests: list("cpu", "250m", "memory", "64Mi", "ephemeral-storage", "1Gi", "hugepages-2Mi", "4Mi"),
				Limits:   list("cpu", "1500m", "memory", "128Mi", "ephemeral-storage", "2Gi", "hugepages-2Mi", "4Mi"),
			}},
			{Name: "bare"},
			{Name: "zero", Resources: v1.ResourceRequirements{Limits: list("cpu", "0", "memory", "0")}},
			{Name: "negative", Resources: v1.ResourceRequirements{Requests: list("cpu", "-500m")}},
		},
		InitContainers:      []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: list("cpu", "2")}}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
}

func TestResourceValue(t *testing.T) {
	node := list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi")
	podLimits := resourcePod()
	podLimits.Spec.Resources = &v1.ResourceRequirements{Limits: list("cpu", "3", "memory", "1Gi", "ephemeral-storage", "5Gi")}
	tests := []struct {
		name      string
		pod       *v1.Pod
		container string
		sel       v1.ResourceFieldSelector
		node      v1.ResourceList
		want      string
	}{
		{"requests.cpu rounds up to 1", nil, "app", v1.ResourceFieldSelector{Resource: "requests.cpu"}, node, "1"},
		{"requests.cpu in millicores", nil, "app", v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, node, "250"},
		{"limits.cpu rounds up", nil, "app", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "2"},
		{"requests.memory in bytes", nil, "app", v1.ResourceFieldSelector{Resource: "requests.memory"}, node, "67108864"},
		{"limits.memory in Mi", nil, "app", v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, node, "128"},
		{"limits.memory in M rounds up", nil, "app", v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1M")}, node, "135"},
		{"requests.ephemeral-storage in Gi", nil, "app", v1.ResourceFieldSelector{Resource: "requests.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, node, "1"},
		{"limits.ephemeral-storage in Gi", nil, "app", v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, node, "2"},
		{"hugepages limit", nil, "app", v1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}, node, "4"},
		{"negative is 0", nil, "negative", v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, node, "0"},
		{"unset request is 0", nil, "bare", v1.ResourceFieldSelector{Resource: "requests.memory"}, node, "0"},
		{"unset cpu limit is node allocatable", nil, "bare", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "4"},
		{"unset memory limit is node allocatable", nil, "bare", v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, node, "8"},
		{"unset storage limit is node allocatable", nil, "bare", v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, node, "100"},
		{"zero limit is node allocatable", nil, "zero", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "4"},
		{"no allocatable, no default", nil, "bare", v1.ResourceFieldSelector{Resource: "limits.cpu"}, nil, "0"},
		{"hugepages limit not defaulted", nil, "bare", v1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi"}, list("hugepages-2Mi", "1Gi"), "0"},
		{"pod-level cpu limit beats allocatable", podLimits, "bare", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "3"},
		{"pod-level memory limit beats allocatable", podLimits, "bare", v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, node, "1"},
		{"pod-level storage limit is not used", podLimits, "bare", v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, node, "100"},
		{"container limit beats pod-level", podLimits, "app", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "2"},
		{"selector names another container", nil, "bare", v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, node, "1500"},
		{"init container", nil, "init", v1.ResourceFieldSelector{Resource: "requests.cpu"}, node, "2"},
		{"ephemeral container", nil, "debug", v1.ResourceFieldSelector{Resource: "limits.cpu"}, node, "4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			if pod == nil {
				pod = resourcePod()
			}
			got, err := ResourceValue(pod, tt.container, &tt.sel, tt.node)
			if err != nil {
				t.Fatalf("ResourceValue: %v", err)
			}
			if got != tt.want {
				t.Errorf("ResourceValue(%s of %s) = %s, want %s", tt.sel.Resource, tt.container, got, tt.want)
			}
		})
	}
}

func TestResourceValueErrors(t *testing.T) {
	tests := []struct {
		name        string
		container   string
		sel         v1.ResourceFieldSelector
		unsupported bool
		message     string
	}{
		{"unknown resource", "app", v1.ResourceFieldSelector{Resource: "limits.gpu"}, true, "unsupported container resource: limits.gpu"},
		{"unknown kind", "app", v1.ResourceFieldSelector{Resource: "usage.cpu"}, true, "unsupported container resource: usage.cpu"},
		{"no kind", "app", v1.ResourceFieldSelector{Resource: "cpu"}, true, "unsupported container resource: cpu"},
		{"unknown container", "nope", v1.ResourceFieldSelector{Resource: "limits.cpu"}, false, "container nope not found"},
		{"unknown selected container", "app", v1.ResourceFieldSelector{ContainerName: "gone", Resource: "limits.cpu"}, false, "container gone not found"},
		{"negative divisor", "app", v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("-1")}, false, "invalid divisor -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResourceValue(resourcePod(), tt.container, &tt.sel, nil)
			if err == nil {
				t.Fatal("ResourceValue succeeded, want an error")
			}
			if got := errors.Is(err, ErrUnsupportedResource); got != tt.unsupported {
				t.Errorf("errors.Is(ErrUnsupportedResource) = %v, want %v (%v)", got, tt.unsupported, err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not contain %q", err, tt.message)
			}
		})
	}
}
