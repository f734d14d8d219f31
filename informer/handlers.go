package informer

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Handler is an informer and the event handler a component registers on
// it; Name says which in an error.
type Handler struct {
	Name     string
	Informer cache.SharedIndexInformer
	Funcs    cache.ResourceEventHandler
}

// AddHandlers registers each handler on its informer.
func AddHandlers(handlers ...Handler) error {
	for _, h := range handlers {
		if _, err := h.Informer.AddEventHandler(h.Funcs); err != nil {
			return fmt.Errorf("%s handler: %w", h.Name, err)
		}
	}
	return nil
}

// OnChange calls f with the object of every add, update and delete (for
// a delete, possibly a cache.DeletedFinalStateUnknown).
func OnChange(f func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, cur any) { f(cur) },
		DeleteFunc: f,
	}
}
