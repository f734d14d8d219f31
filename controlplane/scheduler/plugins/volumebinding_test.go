package plugins

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
	"github.com/skiff-lab/skiff/localpath"
)

func bindingMode(name string, mode storagev1.VolumeBindingMode, provisioner string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, VolumeBindingMode: &mode, Provisioner: provisioner}
}

func testClaim(name, class, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// testVolume is an Available 1Gi volume of class, on node if set.
func testVolume(name, class, node string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{StorageClassName: class,
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	return pv
}

func withClaims(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: n,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

// volumeBinding is the plugin over the given objects, its client a fake
// holding them too.
func volumeBinding(objs ...runtime.Object) VolumeBinding {
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range objs {
		switch o.(type) {
		case *corev1.PersistentVolumeClaim:
			_ = claims.Add(o)
		case *corev1.PersistentVolume:
			_ = volumes.Add(o)
		case *storagev1.StorageClass:
			_ = classes.Add(o)
		}
	}
	return VolumeBinding{Client: fake.NewClientset(objs...), Claims: corelisters.NewPersistentVolumeClaimLister(claims),
		Volumes: corelisters.NewPersistentVolumeLister(volumes), Classes: storagelisters.NewStorageClassLister(classes)}
}

func TestVolumeBindingFilter(t *testing.T) {
	objs := []runtime.Object{
		bindingMode("fast", storagev1.VolumeBindingImmediate, "example.com/fast"),
		bindingMode("local", storagev1.VolumeBindingWaitForFirstConsumer, localpath.Provisioner),
		bindingMode("manual", storagev1.VolumeBindingWaitForFirstConsumer, noProvisioner),
		testClaim("bound-a", "fast", "pv-a"), testVolume("pv-a", "fast", "a"),
		testClaim("pending", "fast", ""), testClaim("later", "local", ""), testClaim("by-hand", "manual", ""),
		testVolume("free-b", "manual", "b"),
		testClaim("dangling", "fast", "gone"),
	}
	nodes := []*corev1.Node{zonedNode("a", "z"), zonedNode("b", "z")}
	for _, tt := range []struct {
		what   string
		claims []string
		want   map[string][]string
	}{
		{"no claims", nil, map[string][]string{}},
		{"bound volume on a", []string{"bound-a"}, map[string][]string{"b": {reasonNodeConflict}}},
		{"unbound immediate", []string{"bound-a", "pending"}, map[string][]string{"PreFilter": {reasonUnboundImmediate}}},
		{"delayed, provisioned anywhere", []string{"later"}, map[string][]string{}},
		{"delayed, a volume made by hand on b", []string{"by-hand"}, map[string][]string{"a": {reasonBindConflict}}},
		{"missing claim", []string{"nope"}, map[string][]string{"PreFilter": {`persistentvolumeclaim "nope" not found`}}},
		{"volume gone", []string{"dangling"}, map[string][]string{"PreFilter": {`persistentvolumeclaim "dangling" bound to non-existent persistentvolume "gone"`}}},
	} {
		pod := testPod("p", nil, withClaims(tt.claims...))
		if got := runCycleFilter(volumeBinding(objs...), pod, nodeInfos(nodes)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.what, got, tt.want)
		}
	}
}

// TestVolumeBindingPreBind: a delayed claim is given the chosen node.
func TestVolumeBindingPreBind(t *testing.T) {
	v := volumeBinding(bindingMode("local", storagev1.VolumeBindingWaitForFirstConsumer, localpath.Provisioner),
		testClaim("later", "local", ""), testClaim("done", "local", "pv"), testVolume("pv", "local", ""))
	if err := v.PreBind(context.Background(), testPod("p", nil, withClaims("later", "done")), "a"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"later": "a", "done": ""} {
		pvc, err := v.Client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
		if got := pvc.Annotations[localpath.AnnSelectedNode]; err != nil || got != want {
			t.Errorf("%s: selected node %q %v, want %q", name, got, err, want)
		}
	}
}

func nodeInfos(nodes []*corev1.Node) []*framework.NodeInfo { return cluster(nodes, nil) }
