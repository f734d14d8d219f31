package quota

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestValidName(t *testing.T) {
	for name, valid := range map[v1.ResourceName]bool{
		"requests.cpu": true, "limits.memory": true, "cpu": true, "pods": true, "configmaps": true,
		"services.nodeports": true, "requests.storage": true, "persistentvolumeclaims": true,
		"requests.hugepages-2Mi": true, "count/deployments.apps": true, "count/widgets.example.com": true,
		"requests.example.com/dongle": true, "gold.storageclass.storage.k8s.io/persistentvolumeclaims": true,
		"storage": false, "bogus": false, "requests.bogus": false, "a/b/c": false, "": false,
	} {
		if got := ValidName(name) == nil; got != valid {
			t.Errorf("ValidName(%q) valid = %v, want %v (%v)", name, got, valid, ValidName(name))
		}
	}
}

func TestPodUsageCountsExtendedResources(t *testing.T) {
	c := v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{"cpu": resource.MustParse("500m"), "example.com/dongle": resource.MustParse("2"), "hugepages-2Mi": resource.MustParse("4Mi")},
		Limits:   v1.ResourceList{"example.com/dongle": resource.MustParse("2")}}}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	got := Usage(v1.Resource("pods"), pod, time.Now())
	for name, want := range map[v1.ResourceName]string{"requests.example.com/dongle": "2", "requests.hugepages-2Mi": "4Mi", "requests.cpu": "500m", "pods": "1"} {
		if q, ok := got[name]; !ok || q.String() != want {
			t.Errorf("%s used %v, want %s (all: %v)", name, q.String(), want, got)
		}
	}
	if _, ok := got["limits.example.com/dongle"]; ok {
		t.Errorf("an extended resource's limit counted: %v", got)
	}
}
