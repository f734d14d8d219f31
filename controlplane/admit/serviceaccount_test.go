package admit

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestServiceAccount(t *testing.T) {
	no := false
	lookups := fakeLookups{accounts: map[string]*v1.ServiceAccount{
		"ns/default": {ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}},
		"ns/quiet":   {ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "ns"}, AutomountServiceAccountToken: &no},
	}}
	bob := &user.DefaultInfo{Name: "bob"}
	admit := func(pod *v1.Pod) error {
		return NewServiceAccount(lookups).Admit(t.Context(), attrs(admission.Create, podsResource, "", "ns", pod.Name, pod, nil, bob), nil)
	}
	withContainers := func(sa string, cs ...v1.Container) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{ServiceAccountName: sa,
			InitContainers: cs[:1], Containers: cs[1:]}}
	}

	pod := withContainers("", v1.Container{Name: "init"}, v1.Container{Name: "app"},
		v1.Container{Name: "own", VolumeMounts: []v1.VolumeMount{{Name: "mine", MountPath: APIAccessMountPath}}})
	if err := admit(pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" || len(pod.Spec.Volumes) != 1 {
		t.Fatalf("account %q volumes %v", pod.Spec.ServiceAccountName, pod.Spec.Volumes)
	}
	vol := pod.Spec.Volumes[0]
	if !strings.HasPrefix(vol.Name, APIAccessVolumePrefix) || len(vol.Name) != len(APIAccessVolumePrefix)+5 || vol.Projected == nil ||
		vol.Projected.Sources[0].ServiceAccountToken.Path != "token" || *vol.Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
		vol.Projected.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || vol.Projected.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("volume %+v", vol)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		want := vol.Name
		if c.Name == "own" {
			want = "mine"
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != want || c.VolumeMounts[0].MountPath != APIAccessMountPath {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}

	quiet := withContainers("quiet", v1.Container{Name: "init"}, v1.Container{Name: "app"})
	optedOut := withContainers("", v1.Container{Name: "init"}, v1.Container{Name: "app"})
	optedOut.Spec.AutomountServiceAccountToken = &no
	for _, p := range []*v1.Pod{quiet, optedOut} {
		if err := admit(p); err != nil || len(p.Spec.Volumes) != 0 {
			t.Errorf("automount false: %v, volumes %v", err, p.Spec.Volumes)
		}
	}
	err := admit(withContainers("ghost", v1.Container{Name: "init"}, v1.Container{Name: "app"}))
	if want := `pods "p" is forbidden: error looking up service account ns/ghost: serviceaccounts "ghost" not found`; err == nil || err.Error() != want {
		t.Errorf("missing account: %v, want %q", err, want)
	}
}
