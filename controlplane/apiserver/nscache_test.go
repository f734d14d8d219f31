package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceCacheObserve(t *testing.T) {
	ns := func(rv string, terminating bool) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
		if terminating {
			ts := metav1.NewTime(time.Now())
			n.DeletionTimestamp = &ts
		}
		return n
	}
	type step struct {
		obj     *corev1.Namespace
		deleted bool
	}
	tests := []struct {
		name                string
		steps               []step
		wantKnown, wantTerm bool
	}{
		{"active", []step{{ns("5", false), false}}, true, false},
		{"terminating", []step{{ns("5", false), false}, {ns("6", true), false}}, true, true},
		{"older news ignored", []step{{ns("6", true), false}, {ns("5", false), false}}, true, true},
		{"deleted", []step{{ns("5", false), false}, {ns("7", true), true}}, false, true},
		{"not revived by an older event", []step{{ns("7", true), true}, {ns("6", true), false}}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &namespaceCache{synced: true}
			for _, s := range tc.steps {
				c.observe(s.obj, s.deleted)
			}
			known, term := c.lookup("a")
			if known != tc.wantKnown || (known && term != tc.wantTerm) {
				t.Errorf("lookup = %v, %v; want %v, %v", known, term, tc.wantKnown, tc.wantTerm)
			}
		})
	}
	unsynced := &namespaceCache{}
	unsynced.observe(ns("1", false), false)
	if known, _ := unsynced.lookup("a"); known {
		t.Error("an unsynced cache must send lookups to the store")
	}
}
