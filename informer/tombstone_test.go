package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestFromTombstone(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	tests := []struct {
		name string
		obj  any
		want *corev1.Pod
	}{
		{"object", pod, pod},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "default/p", Obj: pod}, pod},
		{"other kind", &corev1.Node{}, nil},
		{"tombstone of another kind", cache.DeletedFinalStateUnknown{Obj: &corev1.Node{}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromTombstone[*corev1.Pod](tt.obj)
			if got != tt.want || ok != (tt.want != nil) {
				t.Errorf("FromTombstone = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}
