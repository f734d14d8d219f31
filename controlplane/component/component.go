// Package component is how the control plane runs its components, the
// scheduler and the controllers: each is built from a Context (one shared
// informer factory, the clients, event recorders), the shared informers
// are started and synced, and every component then runs until its ctx
// ends. Components read through the informers, write with the clientset
// and serialize their work per key on a rate-limited workqueue
// (RunWorkers). Leader election, which decides when they run, is here too.
// The components never import each other.
package component

import (
	"context"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
)

// Component is one control loop. Run blocks until ctx ends; it may assume
// the shared informers it registered in its constructor have synced.
type Component interface {
	Run(ctx context.Context)
}

// Context is what every component's constructor gets.
type Context struct {
	Client kubernetes.Interface
	// Dynamic reaches resources by GroupVersionResource (the namespace and
	// garbage collectors work on every resource discovery lists).
	Dynamic dynamic.Interface
	// Metadata reads any resource as PartialObjectMetadata (the garbage
	// collector's informers).
	Metadata  metadata.Interface
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder reporting as component.
	Recorder func(component string) record.EventRecorder
	// Tracing makes the spans of pods' journeys (nil: none).
	Tracing trace.TracerProvider
}

// Constructor builds a component, registering the informers it needs.
type Constructor func(Context) (Component, error)

// Run builds every component, starts the shared informers, waits for them
// to sync and runs the components until ctx ends.
func Run(ctx context.Context, cc Context, constructors map[string]Constructor) error {
	running := map[string]Component{}
	for name, build := range constructors {
		c, err := build(cc)
		if err != nil {
			return fmt.Errorf("component %s: %w", name, err)
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
