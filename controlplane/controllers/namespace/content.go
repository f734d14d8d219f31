package namespace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// content deletes and lists the objects of one resource in one namespace.
type content interface {
	deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error
	list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]metav1.Object, error)
}

// dynamicContent reaches every resource through the dynamic client.
type dynamicContent struct{ client dynamic.Interface }

var _ content = dynamicContent{}

func (d dynamicContent) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	// Background: the namespace controller itself makes sure everything
	// goes, so the garbage collector must not orphan anything.
	background := metav1.DeletePropagationBackground
	return d.client.Resource(gvr).Namespace(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
}

func (d dynamicContent) list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]metav1.Object, error) {
	l, err := d.client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

var podsResource = schema.GroupResource{Resource: "pods"}

// deletionPhases returns the resources to empty, in the order to empty
// them: pods first, alone, so that no pod outlives the objects it uses
// (secrets, service accounts, network policies); then every other
// namespaced resource that can be listed and deleted as a collection.
// Subresources are skipped. Group versions that do not parse are returned
// as an error next to what could be used.
func deletionPhases(lists []*metav1.APIResourceList) ([][]schema.GroupVersionResource, error) {
	var pods, rest []schema.GroupVersionResource
	var errs []error
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse group version %q: %w", l.GroupVersion, err))
			continue
		}
		for _, r := range l.APIResources {
			if !r.Namespaced || strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "deletecollection") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if gvr.GroupResource() == podsResource {
				pods = append(pods, gvr)
			} else {
				rest = append(rest, gvr)
			}
		}
	}
	slices.SortFunc(rest, func(a, b schema.GroupVersionResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Version, b.Version))
	})
	var phases [][]schema.GroupVersionResource
	for _, p := range [][]schema.GroupVersionResource{pods, rest} {
		if len(p) > 0 {
			phases = append(phases, p)
		}
	}
	return phases, errors.Join(errs...)
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// report is what one pass over a namespace's content found.
type report struct {
	discoveryErr error // discovery failed, for some groups or all
	parseErr     error // some group versions did not parse
	// failed holds one message per resource that could not be deleted or listed.
	failed []string
	// remaining counts the objects still there after deletion, by resource,
	// and the finalizers that hold them.
	remaining  map[schema.GroupResource]int
	finalizers map[string]int
}

// err reports whether the pass could not do all it had to.
func (r report) err() error {
	var errs []error
	for _, e := range []error{r.discoveryErr, r.parseErr} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if len(r.failed) > 0 {
		errs = append(errs, fmt.Errorf("delete content: %s", strings.Join(r.failed, "; ")))
	}
	return errors.Join(errs...)
}

func (r report) remainingCount() int {
	n := 0
	for _, c := range r.remaining {
		n += c
	}
	return n
}

// deleteContent deletes what namespace holds, phase by phase; a phase that
// leaves anything behind (pods still terminating) holds the next ones back.
func (c *Controller) deleteContent(ctx context.Context, namespace string) report {
	rep := report{remaining: map[schema.GroupResource]int{}, finalizers: map[string]int{}}
	lists, err := c.discover()
	if err != nil {
		// Discovery may fail for some groups only: work with the rest.
		rep.discoveryErr = fmt.Errorf("discover resources: %w", err)
	}
	phases, err := deletionPhases(lists)
	rep.parseErr = err
	for _, phase := range phases {
		for _, gvr := range phase {
			c.purge(ctx, gvr, namespace, &rep)
		}
		if len(rep.failed) > 0 || rep.remainingCount() > 0 {
			break
		}
	}
	return rep
}

// purge deletes every gvr object in namespace and records in rep what is
// still there afterwards.
func (c *Controller) purge(ctx context.Context, gvr schema.GroupVersionResource, namespace string, rep *report) {
	err := c.content.deleteCollection(ctx, gvr, namespace)
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return // the resource went away, or does not really support it
	}
	if err != nil {
		rep.failed = append(rep.failed, fmt.Sprintf("delete %s: %v", gvr.GroupResource(), err))
		return
	}
	items, err := c.content.list(ctx, gvr, namespace)
	if err != nil {
		rep.failed = append(rep.failed, fmt.Sprintf("list %s: %v", gvr.GroupResource(), err))
		return
	}
	if len(items) == 0 {
		return
	}
	rep.remaining[gvr.GroupResource()] += len(items)
	for _, item := range items {
		for _, f := range item.GetFinalizers() {
			rep.finalizers[f]++
		}
	}
}
