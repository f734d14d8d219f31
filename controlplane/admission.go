package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	psadmission "k8s.io/pod-security-admission/admission"

	"github.com/skiff-lab/skiff/controlplane/admit"
	"github.com/skiff-lab/skiff/controlplane/dynadmission"
)

// AdmissionPlugins are the admission plugins, in the order they run
// (kube-apiserver's): the built-in ones, then those configured through the
// API (webhooks and policies), ResourceQuota last.
var AdmissionPlugins = slices.Concat([]string{"LimitRanger", "ServiceAccount", "NodeRestriction", "PodSecurity", "Priority",
	"DefaultTolerationSeconds", "DefaultStorageClass", "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"}, dynadmission.PluginNames, []string{"ResourceQuota"})

// admissionChain is the API server's admission plugins, but those
// disabled, in kube-apiserver's order, reading through f's caches (started
// by the caller once the server serves) and, for what those lack, the API,
// asking authz what users may do; dyn builds the dynamic ones.
func admissionChain(f informers.SharedInformerFactory, client kubernetes.Interface, authz authorizer.Authorizer, dyn *dynadmission.Plugins, disabled []string) (admission.Interface, error) {
	for _, name := range disabled {
		if !slices.Contains(AdmissionPlugins, name) {
			return nil, fmt.Errorf("--disable-admission-plugins: unknown plugin %q (known: %s)", name, strings.Join(AdmissionPlugins, ", "))
		}
	}
	core := f.Core().V1()
	l := &lookups{client: client, pods: core.Pods().Lister(), accounts: core.ServiceAccounts().Lister(), nodes: core.Nodes().Lister(),
		limitRanges: core.LimitRanges().Lister(), limitRangesSynced: core.LimitRanges().Informer().HasSynced,
		priorityClasses: f.Scheduling().V1().PriorityClasses().Lister(), quotas: core.ResourceQuotas().Lister(),
		runtimeClasses: f.Node().V1().RuntimeClasses().Lister(), storageClasses: f.Storage().V1().StorageClasses().Lister()}
	build := map[string]func() (admission.Interface, error){
		"LimitRanger":     func() (admission.Interface, error) { return admit.NewLimitRanger(l), nil },
		"ServiceAccount":  func() (admission.Interface, error) { return admit.NewServiceAccount(l), nil },
		"NodeRestriction": func() (admission.Interface, error) { return admit.NewNodeRestriction(l), nil },
		"PodSecurity": func() (admission.Interface, error) {
			return admit.NewPodSecurity(psadmission.NamespaceGetterFromListerAndClient(core.Namespaces().Lister(), client),
				psadmission.PodListerFromInformer(core.Pods().Lister()))
		},
		"Priority": func() (admission.Interface, error) { return admit.NewPriority(l), nil },
		"DefaultTolerationSeconds": func() (admission.Interface, error) {
			return admit.NewDefaultTolerationSeconds(), nil
		},
		"DefaultStorageClass": func() (admission.Interface, error) { return admit.NewDefaultStorageClass(l), nil },
		"PersistentVolumeClaimResize": func() (admission.Interface, error) {
			return admit.NewPersistentVolumeClaimResize(l), nil
		},
		"RuntimeClass":        func() (admission.Interface, error) { return admit.NewRuntimeClass(l), nil },
		"CertificateApproval": func() (admission.Interface, error) { return admit.NewCertificateApproval(authz), nil },
		"CertificateSigning":  func() (admission.Interface, error) { return admit.NewCertificateSigning(authz), nil },
		"CertificateSubjectRestriction": func() (admission.Interface, error) {
			return admit.NewCertificateSubjectRestriction(), nil
		},
		"ResourceQuota": func() (admission.Interface, error) { return admit.NewResourceQuota(l), nil },
	}
	for _, name := range dynadmission.PluginNames {
		build[name] = func() (admission.Interface, error) { return dyn.New(name) }
	}
	var chain []admission.Interface
	for _, name := range AdmissionPlugins {
		if slices.Contains(disabled, name) {
			continue
		}
		p, err := build[name]()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		chain = append(chain, apiserver.TraceMutations(name, p))
	}
	return admission.NewChainHandler(chain...), nil
}

// lookups finds pods and service accounts for the plugins: in the cache,
// else (not there yet, or not synced) through the API.
type lookups struct {
	client            kubernetes.Interface
	pods              corelisters.PodLister
	accounts          corelisters.ServiceAccountLister
	nodes             corelisters.NodeLister
	limitRanges       corelisters.LimitRangeLister
	limitRangesSynced cache.InformerSynced
	priorityClasses   schedulinglisters.PriorityClassLister
	quotas            corelisters.ResourceQuotaLister
	runtimeClasses    nodelisters.RuntimeClassLister
	storageClasses    storagelisters.StorageClassLister
}

// ResourceQuotas lists the namespace's quotas from the cache, or, fresh,
// through the API (after a charge found the cache behind).
func (l *lookups) ResourceQuotas(ctx context.Context, namespace string, fresh bool) ([]*corev1.ResourceQuota, error) {
	if !fresh {
		return l.quotas.ResourceQuotas(namespace).List(labels.Everything())
	}
	list, err := l.client.CoreV1().ResourceQuotas(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return pointers(list.Items), nil
}

// UpdateQuotaStatus writes q's status if q is still the stored version.
func (l *lookups) UpdateQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) error {
	_, err := l.client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	return err
}

func (l *lookups) PriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	return cachedOrLive(ctx, func() (*schedulingv1.PriorityClass, error) { return l.priorityClasses.Get(name) },
		func(ctx context.Context) (*schedulingv1.PriorityClass, error) {
			return l.client.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) RuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	return cachedOrLive(ctx, func() (*nodev1.RuntimeClass, error) { return l.runtimeClasses.Get(name) },
		func(ctx context.Context) (*nodev1.RuntimeClass, error) {
			return l.client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) StorageClass(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	return cachedOrLive(ctx, func() (*storagev1.StorageClass, error) { return l.storageClasses.Get(name) },
		func(ctx context.Context) (*storagev1.StorageClass, error) {
			return l.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) StorageClasses() ([]*storagev1.StorageClass, error) {
	return l.storageClasses.List(labels.Everything())
}

func (l *lookups) PriorityClasses() ([]*schedulingv1.PriorityClass, error) {
	return l.priorityClasses.List(labels.Everything())
}

// LimitRanges lists from the cache once it has synced (a LimitRange
// created a moment before a pod may be missed, as with kube-apiserver's
// cache), through the API before.
func (l *lookups) LimitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error) {
	if l.limitRangesSynced() {
		return l.limitRanges.LimitRanges(namespace).List(labels.Everything())
	}
	list, err := l.client.CoreV1().LimitRanges(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return pointers(list.Items), nil
}

// pointers points at each of items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func (l *lookups) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return cachedOrLive(ctx, func() (*corev1.Pod, error) { return l.pods.Pods(namespace).Get(name) },
		func(ctx context.Context) (*corev1.Pod, error) {
			return l.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return cachedOrLive(ctx, func() (*corev1.Node, error) { return l.nodes.Get(name) },
		func(ctx context.Context) (*corev1.Node, error) {
			return l.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return cachedOrLive(ctx, func() (*corev1.ServiceAccount, error) { return l.accounts.ServiceAccounts(namespace).Get(name) },
		func(ctx context.Context) (*corev1.ServiceAccount, error) {
			return l.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		})
}

func cachedOrLive[T any](ctx context.Context, cached func() (T, error), live func(context.Context) (T, error)) (T, error) {
	obj, err := cached()
	if apierrors.IsNotFound(err) {
		return live(ctx)
	}
	return obj, err
}
