package informer

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"
)

func TestOnChange(t *testing.T) {
	var got []any
	h := OnChange(func(obj any) { got = append(got, obj) })
	h.OnAdd("added", false)
	h.OnUpdate("old", "new")
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: "gone"}
	h.OnDelete(tombstone)
	if want := []any{"added", "new", tombstone}; !slices.Equal(got, want) {
		t.Errorf("f saw %v, want %v", got, want)
	}
}
