package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	if phase == corev1.NamespaceTerminating {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
	}
	return ns
}

func TestSync(t *testing.T) {
	existing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "has"}}
	tests := []struct {
		name       string
		namespace  string
		wantCreate bool
	}{
		{"active namespace gets one", "active", true},
		{"existing account kept", "has", false},
		{"terminating namespace left alone", "going", false},
		{"unknown namespace", "unknown", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{
				namespace("active", corev1.NamespaceActive),
				namespace("has", corev1.NamespaceActive),
				namespace("going", corev1.NamespaceTerminating),
				existing,
			}
			client := fake.NewClientset(objs...)
			inf := informers.NewSharedInformerFactory(client, 0)
			c, err := newController(client, inf)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				var err error
				if sa, ok := o.(*corev1.ServiceAccount); ok {
					err = inf.Core().V1().ServiceAccounts().Informer().GetStore().Add(sa)
				} else {
					err = inf.Core().V1().Namespaces().Informer().GetStore().Add(o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()
			if err := c.sync(context.Background(), tt.namespace); err != nil {
				t.Fatal(err)
			}
			created := false
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" && a.GetResource().Resource == "serviceaccounts" && a.GetNamespace() == tt.namespace {
					created = true
				}
			}
			if created != tt.wantCreate {
				t.Errorf("created %v, want %v (actions %v)", created, tt.wantCreate, client.Actions())
			}
		})
	}
}

func TestDeletedAccountQueuesItsNamespace(t *testing.T) {
	client := fake.NewClientset()
	c, err := newController(client, informers.NewSharedInformerFactory(client, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.accountDeleted(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}})
	if key, _ := c.queue.Get(); key != "ns" {
		t.Errorf("queued %q, want ns", key)
	}
}
