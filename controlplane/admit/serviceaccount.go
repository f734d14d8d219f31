package admit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/controllers/rootcacert"
)

// The API access volume every pod gets, as kube-apiserver's ServiceAccount
// plugin makes it.
const (
	APIAccessVolumePrefix = "kube-api-access-"
	APIAccessMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenSeconds is the kubelet's bound token lifetime (an hour and
	// seven seconds, which marks it as the plugin's).
	tokenSeconds = 3607
)

// Lookups find the objects plugins check against: from caches, then the
// API when the cache does not have them (yet).
type Lookups interface {
	Pod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	ServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
	Node(ctx context.Context, name string) (*v1.Node, error)
}

// ServiceAccount gives every new pod a service account (default
// "default"), which must exist, and, unless the pod or its account opts
// out with automountServiceAccountToken: false, the kube-api-access
// projected volume (a bound token, the cluster CA, the namespace) mounted
// read-only in every container at APIAccessMountPath.
type ServiceAccount struct {
	*admission.Handler
	lookups Lookups
}

// NewServiceAccount returns the plugin.
func NewServiceAccount(l Lookups) *ServiceAccount {
	return &ServiceAccount{Handler: admission.NewHandler(admission.Create), lookups: l}
}

// Admit fills in the pod's service account and API access volume.
func (p *ServiceAccount) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := a.GetObject().(*v1.Pod)
	if !ok || a.GetResource().GroupResource() != podsResource || a.GetSubresource() != "" {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorAnnotation]; mirror {
		if pod.Spec.ServiceAccountName != "" {
			return admission.NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	sa, err := p.account(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountAPIAccess(pod)
	}
	return nil
}

// account finds the service account; "default", which the service account
// controller makes just after its namespace, is looked for a few times.
func (p *ServiceAccount) account(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	tries := 1
	if name == "default" {
		tries = 10
	}
	var err error
	for i := range tries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(100+rand.IntN(100)) * time.Millisecond):
			}
		}
		var sa *v1.ServiceAccount
		if sa, err = p.lookups.ServiceAccount(ctx, namespace, name); !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, err
}

// automount is the pod's choice, else its account's, else true.
func automount(sa *v1.ServiceAccount, pod *v1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountAPIAccess mounts the pod's kube-api-access volume (made when it has
// none) in each container that has nothing at APIAccessMountPath.
func mountAPIAccess(pod *v1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, APIAccessVolumePrefix) {
			name = v.Name
			break
		}
	}
	needed := false
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(&cs[i], APIAccessMountPath) {
				needed = true
			}
		}
	}
	if !needed {
		return
	}
	if name == "" {
		name = freeVolumeName(pod)
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Projected: apiAccessSource()}})
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(&cs[i], APIAccessMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, v1.VolumeMount{Name: name, ReadOnly: true, MountPath: APIAccessMountPath})
			}
		}
	}
}

func mountsAt(c *v1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

func freeVolumeName(pod *v1.Pod) string {
	for {
		name := APIAccessVolumePrefix + utilrand.String(5)
		taken := false
		for _, v := range pod.Spec.Volumes {
			taken = taken || v.Name == name
		}
		if !taken {
			return name
		}
	}
}

// apiAccessSource is the kube-api-access volume: a bound token, the
// cluster CA and the namespace.
func apiAccessSource() *v1.ProjectedVolumeSource {
	mode, seconds := v1.ProjectedVolumeSourceDefaultMode, int64(tokenSeconds)
	return &v1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &seconds}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: rootcacert.Name},
			Items: []v1.KeyToPath{{Key: rootcacert.CAKey, Path: "ca.crt"}}}},
		{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
			FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
}
