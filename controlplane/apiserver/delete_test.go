package apiserver

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestFinalizersFor(t *testing.T) {
	policy := func(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }
	tests := []struct {
		name   string
		have   []string
		policy *metav1.DeletionPropagation
		want   []string
	}{
		{"no policy", []string{"a/b"}, nil, []string{"a/b"}},
		{"background", []string{"a/b"}, policy(metav1.DeletePropagationBackground), []string{"a/b"}},
		{"orphan", nil, policy(metav1.DeletePropagationOrphan), []string{metav1.FinalizerOrphanDependents}},
		{"foreground", []string{"a/b"}, policy(metav1.DeletePropagationForeground), []string{"a/b", metav1.FinalizerDeleteDependents}},
		{"orphan already there", []string{metav1.FinalizerOrphanDependents}, policy(metav1.DeletePropagationOrphan), []string{metav1.FinalizerOrphanDependents}},
		{"background drops gc finalizers", []string{"a/b", metav1.FinalizerOrphanDependents}, policy(metav1.DeletePropagationBackground), []string{"a/b"}},
		{"orphan replaces foreground", []string{metav1.FinalizerDeleteDependents}, policy(metav1.DeletePropagationOrphan), []string{metav1.FinalizerOrphanDependents}},
		{"foreground replaces orphan", []string{metav1.FinalizerOrphanDependents, "a/b"}, policy(metav1.DeletePropagationForeground), []string{"a/b", metav1.FinalizerDeleteDependents}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := append([]string(nil), tt.have...)
			got := finalizersFor(have, tt.policy)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("finalizersFor = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(have, tt.have) {
				t.Errorf("input changed to %v", have)
			}
		})
	}
}

func TestCheckPreconditions(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	pod := apitest.NewPod(nil)
	pod.UID, pod.ResourceVersion = "uid-1", "10"
	uid := func(u string) *types.UID { v := types.UID(u); return &v }
	tests := []struct {
		name     string
		pre      *metav1.Preconditions
		conflict bool
	}{
		{"none", nil, false},
		{"empty", &metav1.Preconditions{}, false},
		{"matching uid and resourceVersion", &metav1.Preconditions{UID: uid("uid-1"), ResourceVersion: ptr.To("10")}, false},
		{"uid mismatch", &metav1.Preconditions{UID: uid("uid-2")}, true},
		{"resourceVersion mismatch", &metav1.Preconditions{ResourceVersion: ptr.To("9")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPreconditions(pods, pod, tt.pre)
			if tt.conflict != apierrors.IsConflict(err) || (!tt.conflict && err != nil) {
				t.Errorf("checkPreconditions = %v, want conflict %v", err, tt.conflict)
			}
		})
	}
}

func TestDeleteOptions(t *testing.T) {
	tests := []struct {
		name        string
		query       string
		contentType string
		body        string
		check       func(*metav1.DeleteOptions) bool
		badReq      bool
	}{
		{"empty", "", "", "", func(o *metav1.DeleteOptions) bool { return o.GracePeriodSeconds == nil && o.PropagationPolicy == nil }, false},
		{"query", "gracePeriodSeconds=5&propagationPolicy=Foreground&dryRun=All", "", "", func(o *metav1.DeleteOptions) bool {
			return *o.GracePeriodSeconds == 5 && *o.PropagationPolicy == metav1.DeletePropagationForeground && o.DryRun[0] == "All"
		}, false},
		{"negative grace becomes 0", "gracePeriodSeconds=-3", "", "", func(o *metav1.DeleteOptions) bool { return *o.GracePeriodSeconds == 0 }, false},
		{"JSON body in another group version", "", "application/json",
			`{"kind":"DeleteOptions","apiVersion":"apps/v1","preconditions":{"uid":"u1"},"propagationPolicy":"Orphan"}`,
			func(o *metav1.DeleteOptions) bool {
				return *o.Preconditions.UID == "u1" && *o.PropagationPolicy == metav1.DeletePropagationOrphan
			}, false},
		{"query overrides body", "gracePeriodSeconds=1", "application/json", `{"gracePeriodSeconds":30}`,
			func(o *metav1.DeleteOptions) bool { return *o.GracePeriodSeconds == 1 }, false},
		{"bad propagation policy", "propagationPolicy=Sideways", "", "", nil, true},
		{"bad dryRun", "dryRun=Some", "", "", nil, true},
		{"bad grace", "gracePeriodSeconds=soon", "", "", nil, true},
		{"bad body", "", "application/json", `{"gracePeriodSeconds":`, nil, true},
		{"body of another kind", "", "application/json", `{"kind":"Pod","apiVersion":"v1"}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/default/pods/web?"+tt.query, strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			opts, err := deleteOptions(r)
			if apitest.BadRequestCase(t, err, tt.badReq) {
				return
			}
			if !tt.check(opts) {
				t.Errorf("options = %+v", opts)
			}
		})
	}
}
