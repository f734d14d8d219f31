// Package podrefs names the API objects a pod refers to: the ConfigMaps and
// Secrets its volumes, environment and image pull secrets read. The agent
// syncs a pod when one of them changes; the Node authorizer lets a node
// read only those of its own pods.
package podrefs

import (
	"iter"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The kinds RefersTo knows.
const (
	ConfigMap          = "ConfigMap"
	Secret             = "Secret"
	ClusterTrustBundle = "ClusterTrustBundle"
)

// RefersTo says whether the pod uses the ConfigMap or Secret (kind) name,
// or, for kind ClusterTrustBundle, projects any cluster trust bundle: a
// change to any bundle may change what a signer's label selector picks.
func RefersTo(pod *v1.Pod, kind, name string) bool {
	if kind == ClusterTrustBundle {
		return ProjectsTrustBundles(pod)
	}
	return slices.Contains(Names(pod, kind), name)
}

// ProjectsTrustBundles says whether a projected volume of the pod has a
// clusterTrustBundle source.
func ProjectsTrustBundles(pod *v1.Pod) bool {
	for src := range Projections(pod) {
		if src.ClusterTrustBundle != nil {
			return true
		}
	}
	return false
}

// Projections yields the sources of every projected volume of the pod.
func Projections(pod *v1.Pod) iter.Seq[*v1.VolumeProjection] {
	return func(yield func(*v1.VolumeProjection) bool) {
		for _, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for i := range vol.Projected.Sources {
				if !yield(&vol.Projected.Sources[i]) {
					return
				}
			}
		}
	}
}

// Names lists, sorted and once each, the objects of kind (ConfigMap or
// Secret) the pod uses in a volume, a projected volume, its containers'
// env or envFrom, or (Secrets) its image pull secrets.
func Names(pod *v1.Pod, kind string) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		out = append(out, volumeRefs(&pod.Spec.Volumes[i], kind)...)
	}
	if kind == Secret {
		for _, ref := range pod.Spec.ImagePullSecrets {
			out = append(out, ref.Name)
		}
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		out = append(out, envRefs(&c, kind)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// volumeRefs names the objects of kind a volume reads.
func volumeRefs(vol *v1.Volume, kind string) []string {
	var out []string
	switch {
	case kind == ConfigMap && vol.ConfigMap != nil:
		out = append(out, vol.ConfigMap.Name)
	case kind == Secret && vol.Secret != nil:
		out = append(out, vol.Secret.SecretName)
	case vol.Projected != nil:
		for _, src := range vol.Projected.Sources {
			if kind == ConfigMap && src.ConfigMap != nil {
				out = append(out, src.ConfigMap.Name)
			}
			if kind == Secret && src.Secret != nil {
				out = append(out, src.Secret.Name)
			}
		}
	}
	return out
}

// envRefs names the objects of kind a container's environment reads.
func envRefs(c *v1.Container, kind string) []string {
	var out []string
	for _, from := range c.EnvFrom {
		if kind == ConfigMap && from.ConfigMapRef != nil {
			out = append(out, from.ConfigMapRef.Name)
		}
		if kind == Secret && from.SecretRef != nil {
			out = append(out, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case kind == ConfigMap && e.ValueFrom.ConfigMapKeyRef != nil:
			out = append(out, e.ValueFrom.ConfigMapKeyRef.Name)
		case kind == Secret && e.ValueFrom.SecretKeyRef != nil:
			out = append(out, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	return out
}

// ClaimName is the PersistentVolumeClaim a volume uses, if any: the one
// it names, or, for a generic ephemeral volume, the claim made for it
// (<pod>-<volume>), which must belong to the pod (ephemeral).
func ClaimName(pod *v1.Pod, vol *v1.Volume) (name string, ephemeral, ok bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, false, true
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name, true, true
	}
	return "", false, false
}

// Claims lists the claims the pod's volumes use.
func Claims(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		if name, _, ok := ClaimName(pod, &pod.Spec.Volumes[i]); ok {
			out = append(out, name)
		}
	}
	return out
}
