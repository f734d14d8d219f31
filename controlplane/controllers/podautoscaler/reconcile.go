package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// run is one sync of one autoscaler: its copy the sync brings up to date,
// its history, and the time of the sync.
type run struct {
	*Controller
	key  string
	hpa  *autoscalingv2.HorizontalPodAutoscaler
	hist *history
	now  time.Time
}

// plan is what a sync decided: the replica count to have, why it differs
// from the current one, and the metrics it saw.
type plan struct {
	desired  int32
	reason   string
	statuses []autoscalingv2.MetricStatus
}

// reconcile scales hpa's target as its metrics say and writes its status
// when that changed. The spec is read as the API server defaults it.
func (c *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	r := &run{Controller: c, key: key, hpa: hpa.DeepCopy(), hist: c.histories.get(key), now: c.clock.Now()}
	registry.DefaultAutoscaler(r.hpa)
	err := r.autoscale(ctx)
	return errors.Join(err, r.writeStatus(ctx, hpa))
}

// autoscale reads the target's scale, decides and rescales, keeping the
// copy's status and conditions as upstream's controller keeps them.
func (r *run) autoscale(ctx context.Context) error {
	ref := r.hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, r.hpa.Namespace, ref.Name)
	scale, gvr, err := r.scales.scaleOf(ctx, r.hpa.Namespace, ref)
	if err != nil {
		r.warn("FailedGetScale", err.Error())
		r.condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		return fmt.Errorf("failed to query scale subresource for %s: %w", reference, err)
	}
	r.condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := scale.Spec.Replicas
	r.hist.seed(current, r.now)
	p, usable, metricsErr := r.plan(ctx, scale)
	if !usable {
		r.setStatus(current, r.hpa.Status.DesiredReplicas, p.statuses, false)
		r.warn("FailedComputeMetricsReplicas", metricsErr.Error())
		return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, metricsErr)
	}
	if p.desired != current {
		if err := r.rescale(ctx, gvr, scale, p); err != nil {
			r.setStatus(current, r.hpa.Status.DesiredReplicas, p.statuses, false)
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
	}
	r.setStatus(current, p.desired, p.statuses, p.desired != current)
	return metricsErr
}

// plan decides the replica count: none to change at zero (scaling is
// disabled), max or min replicas when the count is beyond them, else
// what the metrics recommend, normalized. usable is false when the
// metrics recommend nothing; the error reports failed metrics.
func (r *run) plan(ctx context.Context, scale *autoscalingv1.Scale) (p plan, usable bool, err error) {
	current, spec := scale.Spec.Replicas, &r.hpa.Spec
	switch {
	case current == 0:
		r.condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		return plan{}, true, nil
	case current > spec.MaxReplicas:
		return plan{desired: spec.MaxReplicas, reason: "Current number of replicas above Spec.MaxReplicas"}, true, nil
	case current < *spec.MinReplicas:
		return plan{desired: *spec.MinReplicas, reason: "Current number of replicas below Spec.MinReplicas"}, true, nil
	}
	rec, err := r.recommend(ctx, scale)
	if !rec.usable {
		return plan{statuses: rec.statuses}, false, err
	}
	p = plan{desired: rec.replicas, statuses: rec.statuses}
	switch {
	case p.desired > current:
		p.reason = rec.metric + " above target"
	case p.desired < current:
		p.reason = "All metrics below target"
	}
	n := r.hist.normalize(spec, current, p.desired, r.now)
	r.condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, n.stabilized.reason, "%s", n.stabilized.message)
	status := corev1.ConditionFalse
	if n.limited {
		status = corev1.ConditionTrue
	}
	r.condition(autoscalingv2.ScalingLimited, status, n.limit.reason, "%s", n.limit.message)
	p.desired = n.replicas
	return p, true, err
}

// rescale sets the target's replicas to p.desired and reports it.
func (r *run) rescale(ctx context.Context, gvr schema.GroupVersionResource, scale *autoscalingv1.Scale, p plan) error {
	current := scale.Spec.Replicas
	if err := r.scales.setReplicas(ctx, gvr, scale, p.desired); err != nil {
		r.warn("FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", p.desired, p.reason, err))
		r.condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
		return err
	}
	r.condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to %d", p.desired)
	r.recorder.Eventf(r.hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", p.desired, p.reason)
	// Kubernetes 1.37 (HPAScaleToZero) reports on every rescale whether it
	// went to zero, which needs object or external metrics skiff lacks.
	r.condition(autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
	r.hist.recordScale(r.hpa.Spec.Behavior, current, p.desired, r.now)
	slog.Info("rescaled", "controller", controllerName, "namespace", r.hpa.Namespace, "name", r.hpa.Name,
		"from", current, "to", p.desired, "reason", p.reason)
	return nil
}

// setStatus records the replica counts and metrics of this sync.
func (r *run) setStatus(current, desired int32, statuses []autoscalingv2.MetricStatus, rescaled bool) {
	st := &r.hpa.Status
	st.CurrentReplicas, st.DesiredReplicas, st.CurrentMetrics = current, desired, statuses
	st.ObservedGeneration = ptr.To(r.hpa.Generation)
	if rescaled {
		st.LastScaleTime = ptr.To(metav1.NewTime(r.now))
	}
}

// condition sets a condition; its transition time changes with its status.
func (r *run) condition(typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	conds := &r.hpa.Status.Conditions
	i := slices.IndexFunc(*conds, func(c autoscalingv2.HorizontalPodAutoscalerCondition) bool { return c.Type == typ })
	if i < 0 {
		*conds = append(*conds, autoscalingv2.HorizontalPodAutoscalerCondition{Type: typ})
		i = len(*conds) - 1
	}
	c := &(*conds)[i]
	if c.Status != status {
		c.LastTransitionTime = metav1.NewTime(r.now)
	}
	c.Status, c.Reason, c.Message = status, reason, fmt.Sprintf(format, args...)
}

func (r *run) warn(reason, message string) {
	r.recorder.Event(r.hpa, corev1.EventTypeWarning, reason, message)
}

// writeStatus writes the status the sync arrived at when it differs from
// the cached autoscaler's.
func (r *run) writeStatus(ctx context.Context, cached *autoscalingv2.HorizontalPodAutoscaler) error {
	if apiequality.Semantic.DeepEqual(cached.Status, r.hpa.Status) {
		return nil
	}
	hpas := r.client.AutoscalingV2().HorizontalPodAutoscalers(cached.Namespace)
	w := controllers.StatusWriter[*autoscalingv2.HorizontalPodAutoscaler]{Noun: "horizontalpodautoscaler",
		Get: func(ctx context.Context, _, name string, o metav1.GetOptions) (*autoscalingv2.HorizontalPodAutoscaler, error) {
			return hpas.Get(ctx, name, o)
		},
		Update: hpas.UpdateStatus}
	err := w.Write(ctx, cached, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status = *r.hpa.Status.DeepCopy() })
	if err != nil {
		r.warn("FailedUpdateStatus", err.Error())
	}
	return err
}
