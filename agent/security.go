package agent

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// containerSecurity merges the pod's and the container's security contexts
// into what the runtime applies, by the kubelet's rules: where both set a
// field (runAsUser, runAsGroup, runAsNonRoot, seccompProfile) the
// container's wins; fsGroup and supplementalGroups (pod only) become
// supplementary groups; allowPrivilegeEscalation: false sets no_new_privs,
// which privileged overrides; hostPID and hostIPC come from the pod. A pod
// that sets no seccomp profile gets RuntimeDefault (the kubelet's
// seccompDefault). It does no I/O, and the result shares nothing with pod.
// The only error is a Localhost seccomp profile without a file name.
func containerSecurity(pod *v1.Pod, c *v1.Container) (*cri.Security, error) {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &v1.SecurityContext{}
	}
	sec := &cri.Security{
		RunAsUser:      valueOf(either(csc.RunAsUser, psc.RunAsUser)),
		RunAsGroup:     valueOf(either(csc.RunAsGroup, psc.RunAsGroup)),
		RunAsNonRoot:   isTrue(either(csc.RunAsNonRoot, psc.RunAsNonRoot)),
		ReadOnlyRootfs: isTrue(csc.ReadOnlyRootFilesystem),
		Privileged:     isTrue(csc.Privileged),
		HostPID:        pod.Spec.HostPID,
		HostIPC:        pod.Spec.HostIPC,
	}
	if psc.FSGroup != nil {
		sec.SupplementalGroups = append(sec.SupplementalGroups, *psc.FSGroup)
	}
	sec.SupplementalGroups = append(sec.SupplementalGroups, psc.SupplementalGroups...)
	if caps := csc.Capabilities; caps != nil {
		sec.AddCaps, sec.DropCaps = capNames(caps.Add), capNames(caps.Drop)
	}
	escalation := csc.AllowPrivilegeEscalation
	sec.NoNewPrivileges = !sec.Privileged && escalation != nil && !*escalation
	var err error
	sec.Seccomp, err = seccompProfile(either(csc.SeccompProfile, psc.SeccompProfile))
	return sec, err
}

// seccompProfile is the profile the runtime applies for a pod's or
// container's seccompProfile (nil: none set). Like the kubelet, it treats a
// type it does not know as Unconfined; a Localhost profile keeps its name,
// which the runtime takes under its seccomp directory.
func seccompProfile(p *v1.SeccompProfile) (cri.Seccomp, error) {
	if p == nil || p.Type == v1.SeccompProfileTypeRuntimeDefault {
		return cri.Seccomp{Type: cri.SeccompRuntimeDefault}, nil
	}
	if p.Type != v1.SeccompProfileTypeLocalhost {
		return cri.Seccomp{Type: cri.SeccompUnconfined}, nil
	}
	if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
		return cri.Seccomp{}, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
	}
	return cri.Seccomp{Type: cri.SeccompLocalhost, Profile: *p.LocalhostProfile}, nil
}

func capNames(caps []v1.Capability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		out = append(out, string(c))
	}
	return out
}

// either is the container's setting if it has one, else the pod's.
func either[T any](container, pod *T) *T {
	if container != nil {
		return container
	}
	return pod
}

// valueOf copies *p, so that the result does not point into the pod.
func valueOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func isTrue(b *bool) bool { return b != nil && *b }

// createContainerReason is the waiting reason for a container the runtime
// would not create: a container its runAsNonRoot refuses is a configuration
// error, as the kubelet reports it; anything else is CreateContainerError.
func createContainerReason(err error) string {
	if errors.Is(err, cri.ErrRunAsNonRoot) {
		return "CreateContainerConfigError"
	}
	return "CreateContainerError"
}

// hasPrivilegedContainer says a container or init container of the pod is
// privileged; like the kubelet, the agent then makes the sandbox privileged.
func hasPrivilegedContainer(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && isTrue(c.SecurityContext.Privileged) {
				return true
			}
		}
	}
	return false
}
