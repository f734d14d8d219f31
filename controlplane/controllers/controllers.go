// Package controllers runs the control loops that keep the cluster as
// declared. Each loop lives in its own package below this one and talks to
// the API server only through client-go: informers from one shared factory
// to read, the clientset to write, a workqueue to serialize work per key.
package controllers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Controller is one control loop. Run blocks until ctx ends; it may assume
// the shared informers it registered in its constructor have synced.
type Controller interface {
	Run(ctx context.Context)
}

// Context is what every controller's constructor gets.
type Context struct {
	Client kubernetes.Interface
	// Dynamic reaches resources by GroupVersionResource (the namespace and
	// garbage collectors work on every resource discovery lists).
	Dynamic   dynamic.Interface
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder reporting as component.
	Recorder func(component string) record.EventRecorder
}

// Constructor builds a controller, registering the informers it needs.
type Constructor func(Context) (Controller, error)

// Run builds every controller, starts the shared informers, waits for them
// to sync and runs the controllers until ctx ends.
func Run(ctx context.Context, cc Context, constructors map[string]Constructor) error {
	running := map[string]Controller{}
	for name, build := range constructors {
		c, err := build(cc)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		running[name] = c
	}
	cc.Informers.Start(ctx.Done())
	for typ, ok := range cc.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	var wg sync.WaitGroup
	for _, c := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Run(ctx)
		}()
	}
	wg.Wait()
	return nil
}
