package registry

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestPodCreateDefaults(t *testing.T) {
	pod := newCreatedPod(nil)
	c := pod.Spec.Containers[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"restartPolicy", pod.Spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", pod.Spec.DNSPolicy, corev1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *pod.Spec.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", pod.Spec.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *pod.Spec.EnableServiceLinks, true},
		{"serviceAccountName", pod.Spec.ServiceAccountName, "default"},
		{"deprecated serviceAccount", pod.Spec.DeprecatedServiceAccount, "default"},
		{"securityContext set", pod.Spec.SecurityContext != nil, true},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"status phase", pod.Status.Phase, corev1.PodPending},
		{"status qosClass", pod.Status.QOSClass, corev1.PodQOSBestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestPodCreateKeepsExplicitValues(t *testing.T) {
	pod := newCreatedPod(func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.ServiceAccountName = "builder"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		p.Status.Phase = corev1.PodRunning // the server owns status on create
	})
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.ServiceAccountName != "builder" ||
		*pod.Spec.TerminationGracePeriodSeconds != 5 || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("explicit values overwritten: %+v", pod.Spec)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
}

func TestPullPolicyFor(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.2", corev1.PullIfNotPresent},
		{"registry:5000/x", corev1.PullAlways},
		{"registry:5000/x:latest", corev1.PullAlways},
		{"registry:5000/team/x:v3", corev1.PullIfNotPresent},
		{"x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"x:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := pullPolicyFor(tt.image); got != tt.want {
				t.Errorf("pullPolicyFor(%q) = %q, want %q", tt.image, got, tt.want)
			}
			pod := newCreatedPod(func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: tt.image}} })
			if got := pod.Spec.InitContainers[0].ImagePullPolicy; got != tt.want {
				t.Errorf("defaulted init container policy = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultProbe(t *testing.T) {
	tests := []struct {
		name  string
		probe *corev1.Probe
		want  *corev1.Probe
	}{
		{
			name:  "http probe gets path, scheme and timings",
			probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			want: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/", Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		},
		{
			name:  "explicit values are kept",
			probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 4, PeriodSeconds: 7, SuccessThreshold: 2, FailureThreshold: 9},
			want:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 4, PeriodSeconds: 7, SuccessThreshold: 2, FailureThreshold: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = tt.probe.DeepCopy(), tt.probe.DeepCopy(), tt.probe.DeepCopy()
			})
			c := pod.Spec.Containers[0]
			for name, got := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s probe = %+v, want %+v", name, got, tt.want)
				}
			}
		})
	}
}

func TestDefaultRequestsFromLimits(t *testing.T) {
	tests := []struct {
		name             string
		limits, requests corev1.ResourceList
		want             corev1.ResourceList
	}{
		{"no limits, no requests", nil, nil, nil},
		{"requests copied from limits", corev1.ResourceList{"cpu": apiresource.MustParse("500m"), "memory": apiresource.MustParse("64Mi")}, nil,
			corev1.ResourceList{"cpu": apiresource.MustParse("500m"), "memory": apiresource.MustParse("64Mi")}},
		{"explicit request kept", corev1.ResourceList{"cpu": apiresource.MustParse("1"), "memory": apiresource.MustParse("64Mi")},
			corev1.ResourceList{"cpu": apiresource.MustParse("100m")},
			corev1.ResourceList{"cpu": apiresource.MustParse("100m"), "memory": apiresource.MustParse("64Mi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: tt.limits, Requests: tt.requests}
			})
			got := pod.Spec.Containers[0].Resources.Requests
			if len(got) != len(tt.want) {
				t.Fatalf("requests = %v, want %v", got, tt.want)
			}
			for name, q := range tt.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("requests[%s] = %s, want %s", name, g.String(), q.String())
				}
			}
		})
	}
}

func TestPodQOSClass(t *testing.T) {
	cpu, mem := apiresource.MustParse("500m"), apiresource.MustParse("128Mi")
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		init      *corev1.ResourceRequirements
		want      corev1.PodQOSClass
	}{
		{"no resources", corev1.ResourceRequirements{}, nil, corev1.PodQOSBestEffort},
		{"zero requests", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": apiresource.MustParse("0")}}, nil, corev1.PodQOSBestEffort},
		{"requests only", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": cpu}}, nil, corev1.PodQOSBurstable},
		{"cpu limit only", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": cpu}}, nil, corev1.PodQOSBurstable},
		{"limits for cpu and memory", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": cpu, "memory": mem}}, nil, corev1.PodQOSGuaranteed},
		{"requests below limits", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": cpu, "memory": mem},
			Requests: corev1.ResourceList{"cpu": apiresource.MustParse("100m")}}, nil, corev1.PodQOSBurstable},
		{"init container without limits", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": cpu, "memory": mem}},
			&corev1.ResourceRequirements{}, corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = tt.resources
				if tt.init != nil {
					p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1", Resources: *tt.init}}
				}
			})
			if pod.Status.QOSClass != tt.want {
				t.Errorf("qosClass = %q, want %q", pod.Status.QOSClass, tt.want)
			}
		})
	}
}

func TestValidatePodSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid", nil, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers: Required value"}},
		{"missing image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " " }, []string{"spec.containers[0].image: Required value"}},
		{"missing container name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }, []string{"spec.containers[0].name: Required value"}},
		{"bad container name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Web_1" }, []string{"spec.containers[0].name: Invalid value"}},
		{"duplicate name across init and app containers", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "web", Image: "busybox:1"}}
		}, []string{"spec.containers[0].name: Duplicate value"}},
		{"port out of range", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
		}, []string{"spec.containers[0].ports[0].containerPort: Invalid value"}},
		{"port missing, bad name and protocol", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http_port", Protocol: "ICMP"}}
		}, []string{"spec.containers[0].ports[0].containerPort: Required value", "spec.containers[0].ports[0].name: Invalid value",
			"spec.containers[0].ports[0].protocol: Unsupported value"}},
		{"restartPolicy bogus", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{"spec.restartPolicy: Unsupported value"}},
		{"dnsPolicy bogus", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, []string{"spec.dnsPolicy: Unsupported value"}},
		{"volumeMount of a missing volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{"spec.containers[0].volumeMounts[0].name: Not found"}},
		{"volumeMount of a declared volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, nil},
		{"duplicate volume and mount path", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data"}, {Name: "data"}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d"}, {Name: "data", MountPath: "/d"}}
		}, []string{"spec.volumes[1].name: Duplicate value", "spec.containers[0].volumeMounts[1].mountPath: Invalid value"}},
		{"requests above limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": apiresource.MustParse("100m")},
				Requests: corev1.ResourceList{"cpu": apiresource.MustParse("200m")},
			}
		}, []string{"spec.containers[0].resources.requests[cpu]: Invalid value"}},
		{"negative limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"memory": apiresource.MustParse("-1")}
		}, []string{"spec.containers[0].resources.limits[memory]: Invalid value", "spec.containers[0].resources.requests[memory]: Invalid value"}},
		{"activeDeadlineSeconds 0", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"negative grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			[]string{"spec.terminationGracePeriodSeconds: Invalid value"}},
		{"probe without handler", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{} },
			[]string{"spec.containers[0].readinessProbe: Required value"}},
		{"env name and value plus valueFrom", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B", Value: "x", ValueFrom: &corev1.EnvVarSource{}}}
		}, []string{"spec.containers[0].env[0].name: Invalid value", "spec.containers[0].env[0].valueFrom: Invalid value"}},
		{"toleration value with Exists", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}, []string{"spec.tolerations[0].value: Invalid value"}},
		{"tolerationSeconds without NoExecute", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](1)}}
		}, []string{"spec.tolerations[0].effect: Invalid value"}},
		{"env names of any printable ASCII but '='", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "1-key.with:dashes", Value: "x"}, {Name: "tab\there"}}
		}, []string{"spec.containers[0].env[1].name: Invalid value"}},
		{"envFrom: two sources in one, a prefix with '='", func(p *corev1.Pod) {
			ref := corev1.LocalObjectReference{Name: "cm"}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "p-", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}},
				{Prefix: "a=", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}}
		}, []string{"spec.containers[0].envFrom[1]: Invalid value", "spec.containers[0].envFrom[2].prefix: Invalid value"}},
		{"bad serviceAccountName", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Not Valid" },
			[]string{"spec.serviceAccountName: Invalid value"}},
		{"invalid sysctl names, the valid ones kept", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "foo-", Value: "bar"}, {Name: "kernel.shmmax", Value: "1"},
				{Name: "safe-and-unsafe", Value: "1"}, {Name: "bar..", Value: "42"}, {Name: "net/ipv4/ip_forward", Value: "1"}}}
		}, []string{"spec.securityContext.sysctls[0].name: Invalid value", "spec.securityContext.sysctls[3].name: Invalid value"}},
		{"duplicate sysctl, net sysctl with hostNetwork", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"},
				{Name: "kernel.shm_rmid_forced", Value: "0"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}
		}, []string{"spec.securityContext.sysctls[1].name: Duplicate value", "spec.securityContext.sysctls[2].name: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(tt.mutate)
			apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod), tt.want...)
		})
	}
}

func TestValidatePodSpecNeedsDefaults(t *testing.T) {
	// Without defaults a bare spec lacks the policies the server fills in.
	spec := apitest.NewPod(nil).Spec
	apitest.CheckErrorFields(t, validatePodSpec(&spec, field.NewPath("spec")),
		"spec.containers[0].imagePullPolicy: Required value", "spec.dnsPolicy: Required value", "spec.restartPolicy: Required value")
}

// withTolerations gives a pod the NoExecute tolerations DefaultTolerationSeconds adds.
func withTolerations(p *corev1.Pod) {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	}
}

func TestPodValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		update func(*corev1.Pod)
		want   []string
	}{
		{"no change", nil, func(*corev1.Pod) {}, nil},
		{"image change", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.26" }, nil},
		{"init image change", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}} },
			func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "busybox:2" }, nil},
		{"set activeDeadlineSeconds", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }, nil},
		{"lower activeDeadlineSeconds", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }, nil},
		{"raise activeDeadlineSeconds", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](90) }, []string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"unset activeDeadlineSeconds", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, []string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"add toleration", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists})
		}, nil},
		{"shorten tolerationSeconds", withTolerations, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](10) }, nil},
		{"lengthen tolerationSeconds", withTolerations, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](900) },
			[]string{"spec.tolerations: Forbidden"}},
		{"remove toleration", withTolerations, func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[1:] }, []string{"spec.tolerations: Forbidden"}},
		{"change container name", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "other" }, []string{"spec: Forbidden"}},
		{"add container", nil, func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox:1"})
		}, []string{"spec: Forbidden"}},
		{"change nodeSelector", nil, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, []string{"spec: Forbidden"}},
		{"change restartPolicy", nil, func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, []string{"spec: Forbidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newCreatedPod(tt.old)
			pod := old.DeepCopy()
			tt.update(pod)
			PodStrategy{}.PrepareForUpdate(pod, old)
			apitest.CheckErrorFields(t, PodStrategy{}.ValidateUpdate(pod, old), tt.want...)
		})
	}
}

func TestPodUpdateDefaultsOmittedFields(t *testing.T) {
	old := newCreatedPod(nil)
	pod := old.DeepCopy()
	pod.Spec.DNSPolicy, pod.Spec.SchedulerName, pod.Spec.Containers[0].ImagePullPolicy = "", "", ""
	PodStrategy{}.PrepareForUpdate(pod, old)
	apitest.CheckErrorFields(t, PodStrategy{}.ValidateUpdate(pod, old))
}

// An update may not change resources, but a quantity written another way
// ("0.5" for the stored "500m") is no change: kube-apiserver compares pod
// specs with apiequality.Semantic.DeepEqual.
func TestPodValidateUpdateSemanticQuantities(t *testing.T) {
	old := newCreatedPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": apiresource.MustParse("500m")}
	})
	pod := old.DeepCopy()
	pod.Spec.Containers[0].Image = "nginx:1.26"
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": apiresource.MustParse("0.5")}
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": apiresource.MustParse("0.5")}
	PodStrategy{}.PrepareForUpdate(pod, old)
	apitest.CheckErrorFields(t, PodStrategy{}.ValidateUpdate(pod, old))
}

func TestPodGracePeriod(t *testing.T) {
	tests := []struct {
		name      string
		nodeName  string
		phase     corev1.PodPhase
		requested *int64
		want      int64
	}{
		{"unbound goes at once", "", corev1.PodRunning, nil, 0},
		{"finished goes at once", "n1", corev1.PodSucceeded, ptr.To[int64](10), 0},
		{"running uses the spec", "n1", corev1.PodRunning, nil, 30},
		{"running uses the request", "n1", corev1.PodRunning, ptr.To[int64](3), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(func(p *corev1.Pod) { p.Spec.NodeName = tt.nodeName })
			pod.Status.Phase = tt.phase
			if got := (PodStrategy{}).GracePeriod(pod, tt.requested); got != tt.want {
				t.Errorf("gracePeriod = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestDefaultVolume(t *testing.T) {
	tests := []struct {
		name  string
		src   corev1.VolumeSource
		check func(*corev1.VolumeSource) bool
	}{
		{"no source becomes emptyDir", corev1.VolumeSource{}, func(s *corev1.VolumeSource) bool { return s.EmptyDir != nil }},
		{"configMap mode", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}},
			func(s *corev1.VolumeSource) bool { return *s.ConfigMap.DefaultMode == 0o644 }},
		{"secret mode", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}},
			func(s *corev1.VolumeSource) bool { return *s.Secret.DefaultMode == 0o644 }},
		{"explicit mode kept", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{DefaultMode: ptr.To[int32](0o400)}},
			func(s *corev1.VolumeSource) bool { return *s.Secret.DefaultMode == 0o400 }},
		{"hostPath type", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}},
			func(s *corev1.VolumeSource) bool { return *s.HostPath.Type == corev1.HostPathUnset }},
		{"PVC untouched", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
			func(s *corev1.VolumeSource) bool { return s.EmptyDir == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newCreatedPod(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tt.src}} })
			if src := &pod.Spec.Volumes[0].VolumeSource; !tt.check(src) {
				t.Errorf("volume source = %+v", src)
			}
		})
	}
}

func TestReadinessGatesCell(t *testing.T) {
	gate := func(c string) corev1.PodReadinessGate {
		return corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(c)}
	}
	pod := newCreatedPod(nil)
	if got := readinessGates(pod); got != "<none>" {
		t.Errorf("no gates: %q", got)
	}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{gate("a"), gate("b"), gate("c")}
	pod.Status.Conditions = []corev1.PodCondition{{Type: "a", Status: corev1.ConditionTrue}, {Type: "b", Status: corev1.ConditionFalse}}
	if got := readinessGates(pod); got != "1/3" {
		t.Errorf("readiness gates = %q, want 1/3", got)
	}
}

// Ephemeral containers: not on create, only added through their
// subresource, never changed or removed, without what only regular
// containers have.
func TestEphemeralContainers(t *testing.T) {
	st := PodStrategy{}
	debugger := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}
	withEC := newCreatedPod(func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger} })
	apitest.CheckErrorFields(t, st.ValidateCreate(withEC), "spec.ephemeralContainers: Forbidden")

	old := newCreatedPod(nil)
	added := old.DeepCopy()
	added.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	added.Spec.Containers[0].Image = "other" // not taken through the subresource
	st.PrepareSubresourceUpdate("ephemeralcontainers", added, old)
	if added.Spec.Containers[0].Image != old.Spec.Containers[0].Image || added.Spec.EphemeralContainers[0].TerminationMessagePath == "" {
		t.Errorf("after the subresource update: %+v", added.Spec)
	}
	apitest.CheckErrorFields(t, append(st.Validate(added), st.ValidateSubresourceUpdate("ephemeralcontainers", added, old)...))
	apitest.CheckErrorFields(t, st.ValidateUpdate(added, old), "spec: Forbidden")

	removed := added.DeepCopy()
	removed.Spec.EphemeralContainers = nil
	apitest.CheckErrorFields(t, st.ValidateSubresourceUpdate("ephemeralcontainers", removed, added), "spec.ephemeralContainers[0]: Forbidden")

	bad := added.DeepCopy()
	bad.Spec.EphemeralContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	bad.Spec.EphemeralContainers[0].TargetContainerName = "nope"
	bad.Spec.EphemeralContainers = append(bad.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: old.Spec.Containers[0].Name, Image: "busybox",
			ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log"}})
	apitest.CheckErrorFields(t, st.Validate(bad), "spec.ephemeralContainers[0].ports: Forbidden",
		"spec.ephemeralContainers[0].targetContainerName: Not found", "spec.ephemeralContainers[1].name: Duplicate value")
}

// A projected podCertificate asks for a known key type, a lifetime of an
// hour to 91 days, and somewhere to put the credentials (the key alone
// will do).
func TestPodCertificateProjection(t *testing.T) {
	pod := func(pc corev1.PodCertificateProjection) *corev1.Pod {
		return newCreatedPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{PodCertificate: &pc}}}}}}
		})
	}
	seconds := func(s int32) *int32 { return &s }
	good := corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem", MaxExpirationSeconds: seconds(3600)}
	apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod(good)))
	short, long, bad := good, good, good
	short.MaxExpirationSeconds = seconds(3599)
	long.MaxExpirationSeconds = seconds(91*24*3600 + 1)
	bad.KeyType, bad.CredentialBundlePath = "DSA", ""
	path := "spec.volumes[0].projected.sources[0].podCertificate"
	apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod(short)), path+".maxExpirationSeconds: Invalid value")
	apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod(long)), path+".maxExpirationSeconds: Invalid value")
	apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod(bad)), path+": Required value", path+".keyType: Unsupported value")
	keyOnly := good
	keyOnly.CredentialBundlePath, keyOnly.KeyPath = "", "key.pem"
	apitest.CheckErrorFields(t, PodStrategy{}.Validate(pod(keyOnly)))
	errs := (PodStrategy{}).Validate(pod(short))
	if !strings.Contains(errs.ToAggregate().Error(), "if provided, maxExpirationSeconds must be >= 3600") {
		t.Errorf("message: %v", errs)
	}
}
