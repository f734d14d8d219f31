// Package persistentvolume binds claims to volumes and reclaims volumes
// whose claims went, as kube-controller-manager's persistentvolume-binder:
// a pending claim gets the smallest available volume of its class that
// has its access modes, its volume mode, room for its request and the
// labels its selector asks for (static binding); with none, the claim
// names its class's provisioner (volume.kubernetes.io/storage-provisioner)
// for that one to make a volume, bound ahead to the claim, which the
// binder then binds. A claim of a WaitForFirstConsumer class waits until
// the scheduler has chosen its first pod's node, and then binds only what
// that node reaches. A volume whose claim is gone is Released, then kept
// (Retain) or deleted (Delete: the object here, or by its provisioner,
// storage first, if one made it).
package persistentvolume

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/localpath"
)

const (
	controllerName = "persistentvolume-binder"
	eventSource    = "persistentvolume-controller"
	workers        = 1

	// Annotations Kubernetes' binder writes.
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
	annProvisionedBy     = localpath.AnnProvisionedBy
	annSelectedNode      = localpath.AnnSelectedNode

	annStorageProvisioner     = localpath.AnnStorageProvisioner
	annBetaStorageProvisioner = localpath.AnnBetaStorageProvisioner

	// noProvisioner is the provisioner of classes whose volumes are all
	// made by hand.
	noProvisioner = "kubernetes.io/no-provisioner"

	claimPrefix  = "claim/"
	volumePrefix = "volume/"
)

// Controller is the binder; its queue holds claim/<ns>/<name> and
// volume/<name> keys.
type Controller struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	nodes    corelisters.NodeLister
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the binder on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	core := cc.Informers.Core().V1()
	c := &Controller{client: cc.Client, claims: core.PersistentVolumeClaims().Lister(), volumes: core.PersistentVolumes().Lister(),
		classes: cc.Informers.Storage().V1().StorageClasses().Lister(), nodes: core.Nodes().Lister(), recorder: cc.Recorder(eventSource),
		queue: component.NewQueue(controllerName)}
	err := informer.AddHandlers(
		informer.Handler{Name: "persistentvolumeclaim", Informer: core.PersistentVolumeClaims().Informer(), Funcs: informer.OnChange(c.claimChanged)},
		informer.Handler{Name: "persistentvolume", Informer: core.PersistentVolumes().Informer(), Funcs: informer.OnChange(c.volumeChanged)},
	)
	return c, err
}

// Run binds and reclaims until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) claimChanged(obj any) {
	if pvc, ok := informer.FromTombstone[*corev1.PersistentVolumeClaim](obj); ok {
		c.queue.Add(claimPrefix + pvc.Namespace + "/" + pvc.Name)
		if pvc.Spec.VolumeName != "" {
			c.queue.Add(volumePrefix + pvc.Spec.VolumeName)
		}
	}
}

// volumeChanged queues the volume, and the pending claims that it might
// now satisfy.
func (c *Controller) volumeChanged(obj any) {
	pv, ok := informer.FromTombstone[*corev1.PersistentVolume](obj)
	if !ok {
		return
	}
	c.queue.Add(volumePrefix + pv.Name)
	pending, err := c.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvc := range pending {
		if pvc.Spec.VolumeName == "" {
			c.queue.Add(claimPrefix + pvc.Namespace + "/" + pvc.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, volumePrefix); ok {
		return c.syncVolume(ctx, name)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, claimPrefix))
	if err != nil {
		return nil
	}
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || pvc.DeletionTimestamp != nil {
		return err
	}
	return c.syncClaim(ctx, pvc)
}

func (c *Controller) syncClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeName == "" {
		return c.syncUnboundClaim(ctx, pvc)
	}
	pv, err := c.volumes.Get(pvc.Spec.VolumeName)
	switch {
	case apierrors.IsNotFound(err):
		if pvc.Status.Phase == corev1.ClaimBound {
			c.recorder.Eventf(pvc, corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			return c.setClaimPhase(ctx, pvc, corev1.ClaimLost, nil)
		}
		return nil
	case err != nil:
		return err
	case pv.Spec.ClaimRef == nil || refersTo(pv.Spec.ClaimRef, pvc):
		return c.bind(ctx, pvc, pv)
	}
	c.recorder.Eventf(pvc, corev1.EventTypeWarning, "FailedBinding", "volume %q already bound to a different claim.", pv.Name)
	return nil
}

// syncUnboundClaim binds a pending claim to a volume that fits, or asks
// its class's provisioner for one. A claim of a WaitForFirstConsumer class
// waits for the scheduler to choose its first pod's node (selected-node)
// and then binds only a volume that node can reach.
func (c *Controller) syncUnboundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	class := ptrString(pvc.Spec.StorageClassName)
	var sc *storagev1.StorageClass
	if class != "" {
		var err error
		if sc, err = c.classes.Get(class); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	node, selected := pvc.Annotations[annSelectedNode]
	delayed := sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if delayed && !selected {
		c.recorder.Event(pvc, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		return nil
	}
	pv, err := c.match(pvc, node)
	if err != nil || pv != nil {
		if pv != nil {
			return c.bind(ctx, pvc, pv)
		}
		return err
	}
	switch {
	case class == "":
		c.recorder.Event(pvc, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		return nil
	case sc == nil:
		c.recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", class)
		return nil
	}
	if sc.Provisioner == noProvisioner {
		c.recorder.Eventf(pvc, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and storage class %q does not provision them", sc.Name)
		return nil
	}
	return c.askProvisioner(ctx, pvc, sc.Provisioner)
}

// askProvisioner names the class's provisioner on the claim, for it to
// make the volume, and says so in an event.
func (c *Controller) askProvisioner(ctx context.Context, pvc *corev1.PersistentVolumeClaim, provisioner string) error {
	if pvc.Annotations[annStorageProvisioner] != provisioner || pvc.Annotations[annBetaStorageProvisioner] != provisioner {
		next := pvc.DeepCopy()
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, annStorageProvisioner, provisioner)
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, annBetaStorageProvisioner, provisioner)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("claim %s/%s: name its provisioner: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	c.recorder.Eventf(pvc, corev1.EventTypeNormal, "ExternalProvisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
			"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", provisioner)
	return nil
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// refersTo reports whether a volume's claimRef names the claim: by name,
// and by UID once it has one (a volume made for a claim to come has none).
func refersTo(ref *corev1.ObjectReference, pvc *corev1.PersistentVolumeClaim) bool {
	return ref.Namespace == pvc.Namespace && ref.Name == pvc.Name && (ref.UID == "" || ref.UID == pvc.UID)
}

// match finds the smallest volume the claim may bind: one made for it,
// or a free one of its class, modes and size that its selector selects
// and, when node is set, that node may reach.
func (c *Controller) match(pvc *corev1.PersistentVolumeClaim, node string) (*corev1.PersistentVolume, error) {
	all, err := c.volumes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	reaches := func(*corev1.PersistentVolume) bool { return true }
	if node != "" {
		n, err := c.nodes.Get(node)
		if err != nil {
			return nil, err
		}
		reaches = func(pv *corev1.PersistentVolume) bool { return Reaches(pv, n) }
	}
	var best *corev1.PersistentVolume
	for _, pv := range all {
		if ref := pv.Spec.ClaimRef; ref != nil && refersTo(ref, pvc) && sameKind(pv, pvc) && pv.DeletionTimestamp == nil {
			return pv, nil
		}
		if !Fits(pv, pvc) || !reaches(pv) {
			continue
		}
		if best == nil || pv.Spec.Capacity.Storage().Cmp(*best.Spec.Capacity.Storage()) < 0 {
			best = pv
		}
	}
	return best, nil
}

// sameKind says whether a volume is of the claim's class and volume mode.
func sameKind(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	return pv.Spec.StorageClassName == ptrString(pvc.Spec.StorageClassName) &&
		ptrString((*string)(pv.Spec.VolumeMode)) == ptrString((*string)(pvc.Spec.VolumeMode))
}

// Fits says whether a free volume may be bound to the claim: Available,
// of its class and volume mode, with its access modes, room for its
// request and the labels its selector asks for.
func Fits(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	if pv.DeletionTimestamp != nil || pv.Spec.ClaimRef != nil || pv.Status.Phase != corev1.VolumeAvailable || !sameKind(pv, pvc) {
		return false
	}
	sel := labels.Everything()
	if pvc.Spec.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(pvc.Spec.Selector); err != nil {
			return false
		}
	}
	return pv.Spec.Capacity.Storage().Cmp(pvc.Spec.Resources.Requests[corev1.ResourceStorage]) >= 0 &&
		sel.Matches(labels.Set(pv.Labels)) && hasModes(pv.Spec.AccessModes, pvc.Spec.AccessModes)
}

// Reaches says whether node may use pv: its node affinity, if any,
// matches the node.
func Reaches(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return true
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(na.Required).Match(node)
	return err == nil && ok
}

func hasModes(have, want []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// bind ties claim and volume both ways, the volume first (so that no
// other claim takes it), then marks both Bound.
func (c *Controller) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
		next := pv.DeepCopy()
		next.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace,
			Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion}
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, annBoundByController, "yes")
		var err error
		if pv, err = c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", next.Name, pvc.Namespace, pvc.Name, err)
		}
	}
	if err := c.setVolumePhase(ctx, pv, corev1.VolumeBound); err != nil {
		return err
	}
	if pvc.Spec.VolumeName != pv.Name || pvc.Annotations[annBindCompleted] != "yes" {
		next := pvc.DeepCopy()
		next.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, annBindCompleted, "yes")
		if pvc.Spec.VolumeName == "" {
			metav1.SetMetaDataAnnotation(&next.ObjectMeta, annBoundByController, "yes")
		}
		var err error
		if pvc, err = c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", next.Namespace, next.Name, pv.Name, err)
		}
	}
	return c.setClaimPhase(ctx, pvc, corev1.ClaimBound, pv)
}

// setClaimPhase records a claim's phase and, once bound, what its volume
// gives it.
func (c *Controller) setClaimPhase(ctx context.Context, pvc *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) error {
	next := pvc.DeepCopy()
	next.Status.Phase = phase
	if pv != nil {
		next.Status.Capacity = pv.Spec.Capacity.DeepCopy()
		next.Status.AccessModes = slices.Clone(pv.Spec.AccessModes)
	}
	if phase == pvc.Status.Phase && (pv == nil || (pvc.Status.Capacity.Storage().Equal(*pv.Spec.Capacity.Storage()) &&
		slices.Equal(pvc.Status.AccessModes, pv.Spec.AccessModes))) {
		return nil
	}
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("claim %s/%s %s: %w", pvc.Namespace, pvc.Name, phase, err)
	}
	return nil
}

func (c *Controller) setVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase) error {
	if pv.Status.Phase == phase {
		return nil
	}
	next := pv.DeepCopy()
	next.Status.Phase = phase
	if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("volume %s %s: %w", pv.Name, phase, err)
	}
	return nil
}

// syncVolume keeps a volume's phase: Available while free, Bound while
// its claim exists, Released once the claim is gone, then reclaimed.
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// A volume deleted while Bound is still released when its claim
	// goes: pv-protection lets it go only once it is no longer Bound.
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable)
	}
	if ref.UID == "" {
		return nil // made for a claim to come: syncClaim binds it
	}
	pvc, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err == nil && pvc.UID == ref.UID {
		return nil // bound, or being bound by syncClaim
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The cache may not show a claim just made: ask the API.
	live, err := c.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err == nil && live.UID == ref.UID {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return c.reclaim(ctx, pv)
}

// reclaim handles a volume whose claim is gone, by its reclaim policy.
func (c *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	if err := c.setVolumePhase(ctx, pv, corev1.VolumeReleased); err != nil {
		return err
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if pv.Annotations[annProvisionedBy] != "" || pv.DeletionTimestamp != nil {
			return nil // its provisioner deletes it, storage first; or it is going
		}
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pv.UID))})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
		}
	case corev1.PersistentVolumeReclaimRecycle:
		c.recorder.Event(pv, corev1.EventTypeWarning, "VolumeFailedRecycle", "Recycle is not supported: the volume stays Released")
	}
	return nil
}
