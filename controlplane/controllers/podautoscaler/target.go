package podautoscaler

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// scaleClient reads and sets the replicas of autoscalers' targets.
type scaleClient interface {
	// scaleOf is the scale of ref in namespace and the resource that
	// serves it.
	scaleOf(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupVersionResource, error)
	// setReplicas sets the target of scale, served by gvr, to replicas.
	setReplicas(ctx context.Context, gvr schema.GroupVersionResource, scale *autoscalingv1.Scale, replicas int32) error
}

// metricsReader reads the metrics API.
type metricsReader interface {
	podMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error)
}

var (
	_ scaleClient   = (*targets)(nil)
	_ metricsReader = resourceMetrics{}
)

// targets reaches any kind with a scale subresource, custom resources
// included, through the dynamic client; the mapper learns kinds served
// after it was built by reading discovery again when a kind is unknown.
// It is safe for concurrent use.
type targets struct {
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

func (t *targets) scaleOf(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mappings, err := t.mapper.RESTMappings(gk)
	if err != nil {
		t.mapper.Reset()
		mappings, err = t.mapper.RESTMappings(gk)
	}
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	var first error
	for _, m := range mappings {
		scale, err := t.get(ctx, m.Resource, namespace, ref.Name)
		if err == nil {
			return scale, m.Resource, nil
		}
		first = cmp.Or(first, err)
	}
	return nil, schema.GroupVersionResource{}, cmp.Or(first, errors.New("unrecognized resource"))
}

func (t *targets) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*autoscalingv1.Scale, error) {
	u, err := t.dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}, "scale")
	if err != nil {
		return nil, err
	}
	scale := &autoscalingv1.Scale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, scale); err != nil {
		return nil, fmt.Errorf("decode scale of %s %s/%s: %w", gvr.Resource, namespace, name, err)
	}
	return scale, nil
}

// setReplicas updates the scale; on a conflict it reads the scale again
// and retries.
func (t *targets) setReplicas(ctx context.Context, gvr schema.GroupVersionResource, scale *autoscalingv1.Scale, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		next := scale.DeepCopy()
		next.Spec.Replicas = replicas
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(next)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion(autoscalingv1.SchemeGroupVersion.String())
		u.SetKind("Scale")
		_, err = t.dynamic.Resource(gvr).Namespace(scale.Namespace).Update(ctx, u, metav1.UpdateOptions{}, "scale")
		if err != nil {
			if latest, getErr := t.get(ctx, gvr, scale.Namespace, scale.Name); getErr == nil {
				scale = latest
			}
		}
		return err
	})
}

// podMetricsResource is the metrics API's PodMetrics, which skiff's API
// server serves from the nodes' stats.
var podMetricsResource = metricsv1beta1.SchemeGroupVersion.WithResource("pods")

// resourceMetrics reads PodMetrics through the dynamic client.
type resourceMetrics struct{ dynamic dynamic.Interface }

func (m resourceMetrics) podMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error) {
	list, err := m.dynamic.Resource(podMetricsResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]metricsv1beta1.PodMetrics, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("decode PodMetrics %s: %w", list.Items[i].GetName(), err)
		}
	}
	return out, nil
}
