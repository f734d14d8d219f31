package agent

import (
	"github.com/skiff-lab/skiff/informer"

	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podObjects reads the API objects pods refer to — ConfigMaps and Secrets
// (env, volumes, image pull secrets) and Services (service links) — from
// informer caches. A ConfigMap or Secret the cache does not have yet is read
// from the API, so an object created just before its pod is found. Safe for
// concurrent use.
type podObjects struct {
	client     kubernetes.Interface
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
	services   corelisters.ServiceLister
}

// watchPodObjects starts the caches of ConfigMaps, Secrets and Services and
// calls changed for every ConfigMap or Secret that is added, updated or
// deleted, so the pods using it are synced (their volumes refreshed) at once.
// It returns when the caches have synced.
func watchPodObjects(ctx context.Context, client kubernetes.Interface, changed func(kind, namespace, name string)) (*podObjects, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	core := factory.Core().V1()
	o := &podObjects{client: client, configMaps: core.ConfigMaps().Lister(),
		secrets: core.Secrets().Lister(), services: core.Services().Lister()}
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"ConfigMap": core.ConfigMaps().Informer(), "Secret": core.Secrets().Informer(),
	} {
		notify := func(obj any) {
			if m, ok := informer.FromTombstone[metav1.Object](obj); ok {
				changed(kind, m.GetNamespace(), m.GetName())
			}
		}
		if _, err := inf.AddEventHandler(informer.OnChange(notify)); err != nil {
			return nil, err
		}
	}
	core.Services().Informer()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	return o, nil
}

// ConfigMap returns the named ConfigMap, or an apierrors NotFound error.
func (o *podObjects) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	cm, err := o.configMaps.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return cm, err
}

// Secret returns the named Secret, or an apierrors NotFound error.
func (o *podObjects) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	s, err := o.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return s, err
}

// Services lists a namespace's Services from the cache.
func (o *podObjects) Services(_ context.Context, namespace string) ([]*v1.Service, error) {
	return o.services.Services(namespace).List(labels.Everything())
}

// objectChanged syncs the pods that use a ConfigMap or Secret that changed.
func (a *Agent) objectChanged(kind, namespace, name string) {
	for _, uid := range a.pods.usersOf(kind, namespace, name) {
		a.pods.queue.Add(uid)
	}
}

// usersOf returns the pods that refer to the ConfigMap or Secret in their
// volumes or env, i.e. the pods to sync when it changes.
func (w *podWorkers) usersOf(kind, namespace, name string) []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.UID
	for uid, pod := range w.pods {
		if pod.Namespace == namespace && refersTo(pod, kind, name) {
			out = append(out, uid)
		}
	}
	return out
}

// refersTo says whether the pod uses the ConfigMap or Secret (kind) name in
// a volume, a projected volume, its containers' env or envFrom, or (Secrets)
// its image pull secrets.
func refersTo(pod *v1.Pod, kind, name string) bool {
	for _, vol := range pod.Spec.Volumes {
		if slices.Contains(volumeRefs(&vol, kind), name) {
			return true
		}
	}
	if kind == "Secret" {
		for _, ref := range pod.Spec.ImagePullSecrets {
			if ref.Name == name {
				return true
			}
		}
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if slices.Contains(envRefs(&c, kind), name) {
			return true
		}
	}
	return false
}

// volumeRefs names the objects of kind a volume reads.
func volumeRefs(vol *v1.Volume, kind string) []string {
	var out []string
	switch {
	case kind == "ConfigMap" && vol.ConfigMap != nil:
		out = append(out, vol.ConfigMap.Name)
	case kind == "Secret" && vol.Secret != nil:
		out = append(out, vol.Secret.SecretName)
	case vol.Projected != nil:
		for _, src := range vol.Projected.Sources {
			if kind == "ConfigMap" && src.ConfigMap != nil {
				out = append(out, src.ConfigMap.Name)
			}
			if kind == "Secret" && src.Secret != nil {
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
		if kind == "ConfigMap" && from.ConfigMapRef != nil {
			out = append(out, from.ConfigMapRef.Name)
		}
		if kind == "Secret" && from.SecretRef != nil {
			out = append(out, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case kind == "ConfigMap" && e.ValueFrom.ConfigMapKeyRef != nil:
			out = append(out, e.ValueFrom.ConfigMapKeyRef.Name)
		case kind == "Secret" && e.ValueFrom.SecretKeyRef != nil:
			out = append(out, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	return out
}
