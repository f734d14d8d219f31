package localpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	claimPrefix  = "claim/"
	volumePrefix = "volume/"
)

// NodeProvisioner is one node's provisioner: it makes the volumes of the
// claims scheduled to its node, grows them when their claims ask for
// more, and deletes the released ones it made.
// Its keys are claim/<ns>/<name> and volume/<name>.
type NodeProvisioner struct {
	client   kubernetes.Interface
	node     string
	dir      string
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	factory  informers.SharedInformerFactory
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
}

// NewNodeProvisioner returns node's provisioner, keeping its volumes'
// directories under dir and reporting events to recorder.
func NewNodeProvisioner(client kubernetes.Interface, recorder record.EventRecorder, node, dir string) (*NodeProvisioner, error) {
	f := informers.NewSharedInformerFactory(client, 0)
	core := f.Core().V1()
	p := &NodeProvisioner{client: client, node: node, dir: dir, factory: f,
		claims: core.PersistentVolumeClaims().Lister(), volumes: core.PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(), recorder: recorder,
		queue: component.NewQueue("local-path-provisioner")}
	err := informer.AddHandlers(
		informer.Handler{Name: "persistentvolumeclaim", Informer: core.PersistentVolumeClaims().Informer(), Funcs: informer.OnChange(func(obj any) {
			if pvc, ok := informer.FromTombstone[*v1.PersistentVolumeClaim](obj); ok && (WantsProvisioning(pvc, node) || wantsGrowth(pvc)) {
				p.queue.Add(claimPrefix + pvc.Namespace + "/" + pvc.Name)
			}
		})},
		informer.Handler{Name: "persistentvolume", Informer: core.PersistentVolumes().Informer(), Funcs: informer.OnChange(func(obj any) {
			if pv, ok := informer.FromTombstone[*v1.PersistentVolume](obj); ok && p.mine(pv) {
				p.queue.Add(volumePrefix + pv.Name)
			}
		})},
	)
	f.Storage().V1().StorageClasses().Informer()
	return p, err
}

// mine says whether pv is a volume this provisioner made on its node.
func (p *NodeProvisioner) mine(pv *v1.PersistentVolume) bool {
	node, ok := NodeOf(pv)
	return Owns(pv) && ok && node == p.node
}

// Run provisions and deletes until ctx ends.
func (p *NodeProvisioner) Run(ctx context.Context) {
	p.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.factory.Core().V1().PersistentVolumeClaims().Informer().HasSynced,
		p.factory.Core().V1().PersistentVolumes().Informer().HasSynced, p.factory.Storage().V1().StorageClasses().Informer().HasSynced) {
		return
	}
	component.RunWorkers(ctx, "local-path-provisioner", p.queue, 1, p.sync)
}

func (p *NodeProvisioner) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, volumePrefix); ok {
		return p.syncVolume(ctx, name)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, claimPrefix))
	if err != nil {
		return nil
	}
	pvc, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if wantsGrowth(pvc) {
		return p.expand(ctx, pvc)
	}
	if !WantsProvisioning(pvc, p.node) {
		return nil
	}
	if err := p.provision(ctx, pvc); err != nil {
		p.recorder.Eventf(pvc, v1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v",
			className(pvc), err)
		return err
	}
	return nil
}

func className(pvc *v1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName == nil {
		return ""
	}
	return *pvc.Spec.StorageClassName
}

// provision makes the claim's directory and its volume; a volume made
// before (a sync repeated) is left as it is.
func (p *NodeProvisioner) provision(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	if _, err := p.volumes.Get(VolumeName(pvc)); err == nil {
		return nil
	}
	sc, err := p.classes.Get(className(pvc))
	if err != nil {
		return err
	}
	if sc.Provisioner != Provisioner {
		return fmt.Errorf("storage class %q is provisioned by %q, not %q", sc.Name, sc.Provisioner, Provisioner)
	}
	p.recorder.Eventf(pvc, v1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim \"%s/%s\"", pvc.Namespace, pvc.Name)
	path := filepath.Join(p.dir, dirName(pvc))
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o777); err != nil { // whatever the umask: any pod user may write
		return err
	}
	pv := volumeFor(pvc, sc, p.node, path)
	_, err = p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return errors.Join(err, os.Remove(path))
	}
	p.recorder.Eventf(pvc, v1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pv.Name)
	return nil
}

// syncVolume deletes a released volume of reclaim policy Delete: its
// directory, then the object.
func (p *NodeProvisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !p.mine(pv) || pv.DeletionTimestamp != nil || pv.Status.Phase != v1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		return err
	}
	if hp := pv.Spec.HostPath; hp != nil {
		if !inDir(p.dir, hp.Path) {
			p.recorder.Eventf(pv, v1.EventTypeWarning, "VolumeFailedDelete", "path %s is not a volume directory of %s: not deleted", hp.Path, p.dir)
			return nil
		}
		if err := os.RemoveAll(hp.Path); err != nil {
			p.recorder.Eventf(pv, v1.EventTypeWarning, "VolumeFailedDelete", "remove %s: %v", hp.Path, err)
			return err
		}
	}
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pv.UID))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// wantsGrowth says whether a bound claim asks for more than it has.
func wantsGrowth(pvc *v1.PersistentVolumeClaim) bool {
	want, have := pvc.Spec.Resources.Requests[v1.ResourceStorage], pvc.Status.Capacity[v1.ResourceStorage]
	return pvc.Spec.VolumeName != "" && pvc.Status.Phase == v1.ClaimBound && want.Cmp(have) > 0
}

// expand grows a claim's volume of this node to its request: a directory
// has no size of its own, so the volume's capacity and then the claim's
// are what change, as a resizer and then the kubelet would report them.
func (p *NodeProvisioner) expand(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	pv, err := p.volumes.Get(pvc.Spec.VolumeName)
	if err != nil || !p.mine(pv) {
		return nil // not this node's to grow
	}
	want := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if pv.Spec.Capacity.Storage().Cmp(want) < 0 {
		p.recorder.Eventf(pvc, v1.EventTypeNormal, "Resizing", "External resizer is resizing volume %s", pv.Name)
		next := pv.DeepCopy()
		next.Spec.Capacity[v1.ResourceStorage] = want
		if _, err := p.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			p.recorder.Eventf(pvc, v1.EventTypeWarning, "VolumeResizeFailed", "resize volume %s: %v", pv.Name, err)
			return err
		}
	}
	next := pvc.DeepCopy()
	next.Status.Capacity = v1.ResourceList{v1.ResourceStorage: want}
	next.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: want}
	if _, err := p.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return err
	}
	p.recorder.Eventf(pvc, v1.EventTypeNormal, "VolumeResizeSuccessful", "resize volume %s to %s succeeded", pv.Name, want.String())
	return nil
}
