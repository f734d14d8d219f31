package controllers

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestResolveControllerRef(t *testing.T) {
	rs := claimOwner()
	get := func(name string) (*appsv1.ReplicaSet, error) {
		if name != rs.Name {
			return nil, errors.New("not found")
		}
		return rs, nil
	}
	ref := func(apiVersion, kind, name, uid string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		want *appsv1.ReplicaSet
	}{
		{"ours", ref("apps/v1", "ReplicaSet", "web", "rs-uid"), rs},
		{"another version of the group", ref("apps/v1beta2", "ReplicaSet", "web", "rs-uid"), rs},
		{"another group", ref("extensions/v1", "ReplicaSet", "web", "rs-uid"), nil},
		{"another kind", ref("apps/v1", "Deployment", "web", "rs-uid"), nil},
		{"replaced", ref("apps/v1", "ReplicaSet", "web", "old-uid"), nil},
		{"missing", ref("apps/v1", "ReplicaSet", "gone", "rs-uid"), nil},
		{"bad apiVersion", ref("a/b/c", "ReplicaSet", "web", "rs-uid"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolveControllerRef(tt.ref, rsKind, get); got != tt.want {
				t.Errorf("ResolveControllerRef = %v, want %v", got, tt.want)
			}
		})
	}
}
