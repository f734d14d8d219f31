package quota

import (
	"testing"

	v1 "k8s.io/api/core/v1"
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
