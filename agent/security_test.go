package agent

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

func TestContainerSecurity(t *testing.T) {
	runtimeDefault := cri.Seccomp{Type: cri.SeccompRuntimeDefault}
	tests := []struct {
		name    string
		pod     v1.PodSpec
		sc      *v1.SecurityContext
		want    cri.Security
		wantErr bool
	}{
		{"nothing asked", v1.PodSpec{}, nil, cri.Security{Seccomp: runtimeDefault}, false},
		{"pod user and groups", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), RunAsNonRoot: ptr.To(true),
			FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000, 5000},
		}}, nil, cri.Security{
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), RunAsNonRoot: true,
			SupplementalGroups: []int64{2000, 4000, 5000}, Seccomp: runtimeDefault,
		}, false},
		{"container wins", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
			RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true),
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
		}}, &v1.SecurityContext{
			RunAsUser: ptr.To[int64](2000), RunAsNonRoot: ptr.To(false),
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		}, cri.Security{RunAsUser: ptr.To[int64](2000), Seccomp: runtimeDefault}, false},
		{"pod seccomp when the container has none", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
		}}, &v1.SecurityContext{}, cri.Security{Seccomp: cri.Seccomp{Type: cri.SeccompUnconfined}}, false},
		{"container-only fields", v1.PodSpec{}, &v1.SecurityContext{
			ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		}, cri.Security{
			ReadOnlyRootfs: true, NoNewPrivileges: true, AddCaps: []string{"NET_ADMIN"}, DropCaps: []string{"ALL"}, Seccomp: runtimeDefault,
		}, false},
		{"escalation allowed", v1.PodSpec{}, &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}, cri.Security{Seccomp: runtimeDefault}, false},
		{"privileged allows escalation", v1.PodSpec{}, &v1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)},
			cri.Security{Privileged: true, Seccomp: runtimeDefault}, false},
		{"host namespaces", v1.PodSpec{HostNetwork: true, HostPID: true, HostIPC: true}, nil,
			cri.Security{HostPID: true, HostIPC: true, Seccomp: runtimeDefault}, false},
		{"localhost profile", v1.PodSpec{}, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{
			Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json"),
		}}, cri.Security{Seccomp: cri.Seccomp{Type: cri.SeccompLocalhost, Profile: "profiles/audit.json"}}, false},
		{"localhost without a profile", v1.PodSpec{}, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}},
			cri.Security{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.pod}
			c := &v1.Container{Name: "c", SecurityContext: tt.sc}
			got, err := containerSecurity(pod, c)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// The result must not point into the pod: the informer's copy is shared.
func TestContainerSecurityCopies(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}}}
	got, err := containerSecurity(pod, &v1.Container{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	*got.RunAsUser = 0
	if *pod.Spec.SecurityContext.RunAsUser != 1000 {
		t.Error("containerSecurity's result shares runAsUser with the pod")
	}
}
