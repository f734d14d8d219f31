package agent

import (
	"context"
	"fmt"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/agent/volumes"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/podrefs"
)

// podObjects reads the API objects pods refer to — ConfigMaps and Secrets
// (env, volumes, image pull secrets), Services (service links) and
// ClusterTrustBundles (projected volumes). As the
// kubelet's watch-based managers, it watches each ConfigMap and Secret a
// pod on this node uses, by name (a list and watch with the field
// selector metadata.name), while some pod uses it: the Node authorizer
// lets a node read those and no others. Services are one cache of all.
// An object whose watch has not synced yet is read from the API. Safe for
// concurrent use.
type podObjects struct {
	ctx      context.Context
	client   kubernetes.Interface
	services corelisters.ServiceLister
	changed  func(kind, namespace, name string)
	tokens   *tokens
	certs    *podCertificates

	mu      sync.Mutex
	watches map[objectKey]*objectWatch

	bundlesOnce sync.Once
	bundles     cache.SharedIndexInformer
}

// objectKey names a ConfigMap or Secret.
type objectKey struct{ kind, namespace, name string }

// objectWatch is the cache of one object and the pods that use it.
type objectWatch struct {
	store  cache.Store
	synced cache.InformerSynced
	stop   context.CancelFunc
	users  map[types.UID]bool
}

// watchPodObjects starts the cache of Services and returns, once it has
// synced, the podObjects that watch what the pods its handlers are given
// use, calling changed for every ConfigMap or Secret that is added, updated or
// deleted, so the pods using it are synced (their volumes refreshed) at
// once. The watches end with ctx.
func watchPodObjects(ctx context.Context, client kubernetes.Interface, node string, changed func(kind, namespace, name string), syncPod func(types.UID)) (*podObjects, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	o := &podObjects{ctx: ctx, client: client, services: factory.Core().V1().Services().Lister(),
		changed: changed, watches: map[objectKey]*objectWatch{}, tokens: newTokens(client, clock.RealClock{}),
		certs: newPodCertificates(ctx, client, node, clock.RealClock{}, syncPod)}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	return o, nil
}

// handlers keep the watches to what the pods of a pod informer use (a
// pod's references cannot change).
func (o *podObjects) handlers() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				o.use(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := informer.FromTombstone[*v1.Pod](obj); ok {
				o.release(pod.UID)
			}
		},
	}
}

// use starts a watch for each ConfigMap and Secret pod uses that has none.
func (o *podObjects) use(pod *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, kind := range []string{podrefs.ConfigMap, podrefs.Secret} {
		for _, name := range podrefs.Names(pod, kind) {
			key := objectKey{kind, pod.Namespace, name}
			w := o.watches[key]
			if w == nil {
				w = o.watch(key)
				o.watches[key] = w
			}
			w.users[pod.UID] = true
		}
	}
}

// release stops the watches no pod but the one of uid used, and forgets
// its tokens and certificates.
func (o *podObjects) release(uid types.UID) {
	o.tokens.forget(uid)
	o.certs.forget(uid)
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, w := range o.watches {
		delete(w.users, uid)
		if len(w.users) == 0 {
			w.stop()
			delete(o.watches, key)
		}
	}
}

// watch starts the cache of one object.
func (o *podObjects) watch(key objectKey) *objectWatch {
	ctx, stop := context.WithCancel(o.ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(o.client, 0, informers.WithNamespace(key.namespace),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.name).String()
		}))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if key.kind == podrefs.Secret {
		inf = factory.Core().V1().Secrets().Informer()
	}
	_, _ = inf.AddEventHandler(informer.OnChange(func(any) { o.changed(key.kind, key.namespace, key.name) }))
	factory.Start(ctx.Done())
	return &objectWatch{store: inf.GetStore(), synced: inf.HasSynced, stop: stop, users: map[types.UID]bool{}}
}

// cached returns the object from its watch's cache (nil when the cache
// does not have it) and whether that cache has synced.
func (o *podObjects) cached(key objectKey) (any, bool) {
	o.mu.Lock()
	w := o.watches[key]
	o.mu.Unlock()
	if w == nil || !w.synced() {
		return nil, false
	}
	obj, _, _ := w.store.GetByKey(key.namespace + "/" + key.name)
	return obj, true
}

// ConfigMap returns the named ConfigMap, or an apierrors NotFound error.
func (o *podObjects) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, synced := o.cached(objectKey{podrefs.ConfigMap, namespace, name})
	if !synced {
		return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if cm, ok := obj.(*v1.ConfigMap); ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

// Secret returns the named Secret, or an apierrors NotFound error.
func (o *podObjects) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, synced := o.cached(objectKey{podrefs.Secret, namespace, name})
	if !synced {
		return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if s, ok := obj.(*v1.Secret); ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

// ServiceAccountToken returns a token of the pod's service account bound
// to the pod, as src asks.
func (o *podObjects) ServiceAccountToken(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	return o.tokens.get(ctx, pod, src)
}

// ClusterTrustBundles lists every ClusterTrustBundle, from a cache of them
// all that the first call starts (as the kubelet, which the Node
// authorizer and the system:node role let read them all); until that cache
// has synced, from the API.
func (o *podObjects) ClusterTrustBundles(ctx context.Context) ([]*certificatesv1.ClusterTrustBundle, error) {
	o.bundlesOnce.Do(o.watchBundles)
	if !o.bundles.HasSynced() {
		list, err := o.client.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]*certificatesv1.ClusterTrustBundle, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
	var out []*certificatesv1.ClusterTrustBundle
	for _, obj := range o.bundles.GetStore().List() {
		if b, ok := obj.(*certificatesv1.ClusterTrustBundle); ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// watchBundles starts the cache of ClusterTrustBundles; a change syncs the
// pods that project bundles.
func (o *podObjects) watchBundles() {
	factory := informers.NewSharedInformerFactory(o.client, 0)
	o.bundles = factory.Certificates().V1().ClusterTrustBundles().Informer()
	_, _ = o.bundles.AddEventHandler(informer.OnChange(func(any) { o.changed(podrefs.ClusterTrustBundle, "", "") }))
	factory.Start(o.ctx.Done())
}

// PodCertificate returns the key and chain of the i-th source of the pod's
// projected volume, asking the signer for them when needed.
func (o *podObjects) PodCertificate(ctx context.Context, pod *v1.Pod, volume string, i int, src *v1.PodCertificateProjection) (volumes.Credentials, error) {
	return o.certs.get(ctx, pod, volume, i, src)
}

// Services lists a namespace's Services from the cache.
func (o *podObjects) Services(_ context.Context, namespace string) ([]*v1.Service, error) {
	return o.services.Services(namespace).List(labels.Everything())
}

// objectChanged syncs the pods that use a ConfigMap or Secret that changed.
func (a *Agent) objectChanged(kind, namespace, name string) {
	for _, uid := range a.pods.usersOf(kind, namespace, name) {
		a.queuePod(uid)
	}
}

// queuePod has the pod synced soon.
func (a *Agent) queuePod(uid types.UID) { a.pods.queue.Add(uid) }

// usersOf returns the pods that refer to the ConfigMap or Secret in their
// volumes or env (or project cluster trust bundles, for a bundle: no
// namespace), i.e. the pods to sync when it changes.
func (w *podWorkers) usersOf(kind, namespace, name string) []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.UID
	for uid, pod := range w.pods {
		if (namespace == "" || pod.Namespace == namespace) && podrefs.RefersTo(pod, kind, name) {
			out = append(out, uid)
		}
	}
	return out
}
