package registry

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
	"k8s.io/utils/ptr"
)

// defaultPodSpec fills in a pod spec (of a pod or a template) as the
// Kubernetes API defaults it.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if f := c.Env[i].ValueFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
			f.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	defaultRequestsFromLimits(&c.Resources)
}

// pullPolicyFor is Always for :latest or untagged images, IfNotPresent
// otherwise (digests included).
func pullPolicyFor(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	switch {
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	case src.DownwardAPI != nil && src.DownwardAPI.DefaultMode == nil:
		src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
	case src.Projected != nil && src.Projected.DefaultMode == nil:
		src.Projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
	case src.HostPath != nil && src.HostPath.Type == nil:
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	case src.Image != nil && src.Image.PullPolicy == "":
		src.Image.PullPolicy = pullPolicyFor(src.Image.Reference)
	case volumeSourceEmpty(src):
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
}

func volumeSourceEmpty(src *corev1.VolumeSource) bool {
	return src.EmptyDir == nil && src.HostPath == nil && src.ConfigMap == nil && src.Secret == nil &&
		src.DownwardAPI == nil && src.Projected == nil && src.PersistentVolumeClaim == nil && src.NFS == nil &&
		src.CSI == nil && src.Ephemeral == nil && src.Image == nil
}

// validatePodSpec checks a pod spec (of a pod or a template) at path.
func validatePodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, vErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, vErrs...)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "must have at least one container"))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(spec.InitContainers, path.Child("initContainers"), names, volumes)...)
	errs = append(errs, validateContainers(spec.Containers, path.Child("containers"), names, volumes)...)
	errs = append(errs, validateEphemeralContainers(spec, path.Child("ephemeralContainers"), volumes)...)
	errs = append(errs, validateOneOf(spec.RestartPolicy, path.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, validateOneOf(spec.DNSPolicy, path.Child("dnsPolicy"),
		corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone)...)
	if d := spec.ActiveDeadlineSeconds; d != nil && *d < 1 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, validateNonNegative(*g, path.Child("terminationGracePeriodSeconds"))...)
	}
	errs = append(errs, validateLabels(spec.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, validateSysctls(spec, path.Child("securityContext", "sysctls"))...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, validateDNSSubdomain(spec.ServiceAccountName, path.Child("serviceAccountName"))...)
	}
	return errs
}

func validateDNSSubdomain(v string, path *field.Path) field.ErrorList {
	return invalidFor(path, v, validation.IsDNS1123Subdomain(v))
}

func validateVolumes(volumes []corev1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range volumes {
		p := path.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, validateDNSLabel(v.Name, p.Child("name"))...)
		}
		if names.Has(v.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		if volumeSourceEmpty(&v.VolumeSource) {
			errs = append(errs, field.Required(p, "must specify a volume type"))
		}
		if v.Image != nil {
			errs = append(errs, validateImageVolume(v.Image, p.Child("image"))...)
		}
		if v.Projected != nil {
			for j, src := range v.Projected.Sources {
				if src.PodCertificate != nil {
					errs = append(errs, validatePodCertificateProjection(src.PodCertificate, p.Child("projected", "sources").Index(j).Child("podCertificate"))...)
				}
			}
		}
	}
	return names, errs
}

// validateImageVolume: an image volume names an image (as a container
// would) and a pull policy.
func validateImageVolume(src *corev1.ImageVolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(src.Reference) == "" {
		errs = append(errs, field.Required(path.Child("reference"), ""))
	}
	return append(errs, validateOneOf(src.PullPolicy, path.Child("pullPolicy"), corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
}

// podCertificateKeyTypes are the key types a podCertificate projection may ask for.
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// Bounds of a podCertificate projection's maxExpirationSeconds: an hour, 91 days.
const (
	minPodCertificateSeconds = 3600
	maxPodCertificateSeconds = 91 * 24 * 3600
)

// validatePodCertificateProjection checks a projected podCertificate source
// as kube-apiserver does: a signer, a key type it knows, a lifetime between
// an hour and 91 days, and where the credentials go.
func validatePodCertificateProjection(pc *corev1.PodCertificateProjection, path *field.Path) field.ErrorList {
	errs := validateSignerName(path.Child("signerName"), pc.SignerName)
	errs = append(errs, validateOneOf(pc.KeyType, path.Child("keyType"), podCertificateKeyTypes...)...)
	if m := pc.MaxExpirationSeconds; m != nil {
		if *m < minPodCertificateSeconds {
			errs = append(errs, field.Invalid(path.Child("maxExpirationSeconds"), *m, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", minPodCertificateSeconds)))
		}
		if most := podCertificateMaxSeconds(pc.SignerName); *m > most {
			errs = append(errs, field.Invalid(path.Child("maxExpirationSeconds"), *m, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", most)))
		}
	}
	if pc.CredentialBundlePath == "" && pc.KeyPath == "" && pc.CertificateChainPath == "" {
		errs = append(errs, field.Required(path, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

func validateContainers(cs []corev1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		c, p := &cs[i], path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, validateDNSLabel(c.Name, p.Child("name"))...)
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		errs = append(errs, validateOneOf(c.ImagePullPolicy, p.Child("imagePullPolicy"),
			corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
		errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
		errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
		errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
		errs = append(errs, validateMounts(c.VolumeMounts, p.Child("volumeMounts"), volumes)...)
		errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
		for name, probe := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
			errs = append(errs, validateProbe(probe, p.Child(name))...)
		}
	}
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			errs = append(errs, validatePortName(port.Name, p.Child("name"))...)
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNumber(port.ContainerPort, p.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePortNumber(port.HostPort, p.Child("hostPort"))...)
		}
		errs = append(errs, validateOneOf(port.Protocol, p.Child("protocol"), corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)...)
	}
	return errs
}

// validateEnvFrom: one source each, named, with a prefix that is itself a
// valid variable name.
func validateEnvFrom(sources []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		p := path.Index(i)
		if src.Prefix != "" {
			errs = append(errs, invalidFor(p.Child("prefix"), src.Prefix, validation.IsRelaxedEnvVarName(src.Prefix))...)
		}
		switch {
		case src.ConfigMapRef != nil && src.SecretRef != nil:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		case src.ConfigMapRef != nil && src.ConfigMapRef.Name == "":
			errs = append(errs, field.Required(p.Child("configMapRef", "name"), ""))
		case src.SecretRef != nil && src.SecretRef.Name == "":
			errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
		case src.ConfigMapRef == nil && src.SecretRef == nil:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		p := path.Index(i).Child("name")
		if e.Name == "" {
			errs = append(errs, field.Required(p, ""))
		}
		// Any printable ASCII but '=' (kube-apiserver's relaxed
		// validation, the only one since 1.34).
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(p, e.Name, msg))
		}
		if e.Value != "" && e.ValueFrom != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	return errs
}

func validateMounts(mounts []corev1.VolumeMount, path *field.Path, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
	}
	return errs
}

func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for name, q := range list.rl {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(list.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for name, req := range r.Requests {
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				"must be less than or equal to "+string(name)+" limit of "+limit.String()))
		}
	}
	return errs
}

func validateProbe(p *corev1.Probe, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	n := 0
	for _, set := range []bool{p.Exec != nil, p.HTTPGet != nil, p.TCPSocket != nil, p.GRPC != nil} {
		if set {
			n++
		}
	}
	var errs field.ErrorList
	if n != 1 {
		errs = append(errs, field.Required(path, "must specify exactly one handler type"))
	}
	for name, v := range map[string]int32{"initialDelaySeconds": p.InitialDelaySeconds, "timeoutSeconds": p.TimeoutSeconds,
		"periodSeconds": p.PeriodSeconds, "successThreshold": p.SuccessThreshold, "failureThreshold": p.FailureThreshold} {
		errs = append(errs, validateNonNegative(int64(v), path.Child(name))...)
	}
	return errs
}

func validateTolerations(ts []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, invalidFor(p.Child("key"), t.Key, validation.IsQualifiedName(t.Key))...)
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		}
		if t.Effect != "" {
			errs = append(errs, validateOneOf(t.Effect, p.Child("effect"), corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)...)
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
	}
	return errs
}

// qosClass computes a pod's QoS class from its containers' resources.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed, any := true, false
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if hasReq && !req.IsZero() {
				any = true
				addQuantity(requests, name, req)
			}
			if hasLim && !lim.IsZero() {
				any = true
				addQuantity(limits, name, lim)
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func addQuantity(list corev1.ResourceList, name corev1.ResourceName, q apiresource.Quantity) {
	cur := list[name]
	cur.Add(q)
	list[name] = cur
}

// sysctlName is a sysctl's name as kube-apiserver accepts it: segments of
// lowercase letters, digits, "-" and "_" between dots or slashes.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls checks a pod's sysctls as kube-apiserver does: valid,
// unique names, and none of a namespace the pod shares with the host.
func validateSysctls(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if spec.SecurityContext == nil {
		return nil
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, s := range spec.SecurityContext.Sysctls {
		p := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, "must have at most 253 characters and match regex "+sysctlName.String()))
		case seen.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen.Insert(s.Name)
		switch ns, _, _ := sysctl.GetNamespace(s.Name); {
		case spec.HostNetwork && ns == sysctl.NetNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == sysctl.IPCNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return errs
}
