package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/disruptionbudget"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxDisruptedPods is how many evictions a budget holds unconfirmed by
// its controller before it refuses more.
const maxDisruptedPods = 2000

// errMultipleBudgets: the eviction subresource spends one budget only.
var errMultipleBudgets = errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")

// evict deletes a pod through pods/eviction with the eviction's options,
// as kube-apiserver does: a pod that is finished, not yet running or
// already going is deleted at once; any other spends one disruption of
// the PodDisruptionBudget that selects it (or is refused with 429 and the
// budget named), is marked DisruptionTarget, then deleted.
func (s *Server) evict(w http.ResponseWriter, r *http.Request, req request) error {
	eviction := &policyv1.Eviction{}
	if err := decodeBody(w, r, policyv1.SchemeGroupVersion.WithKind("Eviction"), eviction); err != nil {
		return err
	}
	if eviction.Name == "" {
		eviction.Name = req.name
	}
	if err := checkIdentity(req, eviction); err != nil {
		return err
	}
	opts := eviction.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if err := validateDeleteOptions(opts); err != nil {
		return err
	}
	ctx := r.Context()
	pod := &corev1.Pod{}
	if err := s.store.Get(ctx, req.res.Key(req.namespace, req.name), pod); err != nil {
		return codec.StoreError(err, req.res.GroupResource(), req.name)
	}
	if !budgetIgnores(pod) {
		err := s.spendDisruption(ctx, pod, len(opts.DryRun) > 0)
		if errors.Is(err, errMultipleBudgets) {
			codec.WriteJSON(w, http.StatusInternalServerError, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusInternalServerError})
			return nil
		}
		if err != nil {
			return err
		}
	}
	if len(opts.DryRun) == 0 {
		if err := s.markDisruptionTarget(ctx, req, pod); err != nil {
			return err
		}
	}
	if _, _, err := s.deleteOne(ctx, req.res, req.namespace, req.name, opts); err != nil {
		return err
	}
	codec.WriteJSON(w, http.StatusCreated, codec.SuccessStatus(nil))
	return nil
}

// budgetIgnores reports whether evicting pod disrupts nothing a budget
// guards: it has finished, has not started, or is already being deleted.
func budgetIgnores(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// spendDisruption takes one allowed disruption from the budget that
// selects pod, recording the pod in its disruptedPods; a pod that is not
// ready is evicted without spending when the budget's policy allows it.
func (s *Server) spendDisruption(ctx context.Context, pod *corev1.Pod, dryRun bool) error {
	res := s.byGroupVersion[policyv1.SchemeGroupVersion]["poddisruptionbudgets"]
	page, err := s.store.List(ctx, res.Prefix(pod.Namespace), store.ListOptions{}, res.NewObj)
	if err != nil {
		return codec.StoreError(err, res.GroupResource(), "")
	}
	var budgets []*policyv1.PodDisruptionBudget
	for _, o := range page.Items {
		if pdb := o.(*policyv1.PodDisruptionBudget); disruptionbudget.Selects(pdb, pod) {
			budgets = append(budgets, pdb)
		}
	}
	switch {
	case len(budgets) == 0:
		return nil
	case len(budgets) > 1:
		return errMultipleBudgets
	}
	pdb := budgets[0]
	if !disruptionbudget.Ready(pod) && unhealthyEvictable(pdb) {
		return nil
	}
	if dryRun {
		return checkBudget(pdb)
	}
	err = s.store.Update(ctx, res.Key(pdb.Namespace, pdb.Name), &policyv1.PodDisruptionBudget{}, func(cur runtime.Object) (runtime.Object, error) {
		b := cur.(*policyv1.PodDisruptionBudget)
		if err := checkBudget(b); err != nil {
			return nil, err
		}
		b.Status.DisruptionsAllowed--
		if b.Status.DisruptionsAllowed == 0 {
			disruptionbudget.SetAllowedCondition(b)
		}
		if b.Status.DisruptedPods == nil {
			b.Status.DisruptedPods = map[string]metav1.Time{}
		}
		b.Status.DisruptedPods[pod.Name] = registry.Now()
		return b, nil
	})
	return codec.StoreError(err, res.GroupResource(), pdb.Name)
}

// unhealthyEvictable reports whether a pod that is not ready may go
// without spending pdb: always under AlwaysAllow, otherwise while the
// budget has the healthy pods it needs.
func unhealthyEvictable(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.DesiredHealthy > 0 && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy
}

// checkBudget refuses an eviction pdb does not allow now.
func checkBudget(pdb *policyv1.PodDisruptionBudget) error {
	gr := policyv1.Resource("poddisruptionbudget")
	switch st := &pdb.Status; {
	case st.ObservedGeneration < pdb.Generation:
		return budgetRefusal(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
	case st.DisruptionsAllowed < 0:
		return withBudgetCause(apierrors.NewForbidden(gr, pdb.Name, errors.New("pdb disruptions allowed is negative")),
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: pdb disruptions allowed is negative", pdb.Name))
	case len(st.DisruptedPods) > maxDisruptedPods:
		return withBudgetCause(apierrors.NewForbidden(gr, pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller")),
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: too many pending evictions not confirmed by PDB controller", pdb.Name))
	case st.DisruptionsAllowed == 0:
		return budgetRefusal(0, exhaustedMessage(pdb))
	}
	return nil
}

// exhaustedMessage says why a budget with no disruptions left refuses.
func exhaustedMessage(pdb *policyv1.PodDisruptionBudget) string {
	c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	failed := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	switch {
	case failed && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case failed:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}

// budgetRefusal is the 429 that tells a client (kubectl drain) to retry
// the eviction later.
func budgetRefusal(retryAfter int, message string) error {
	return withBudgetCause(apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter), message)
}

func withBudgetCause(err *apierrors.StatusError, message string) error {
	if err.ErrStatus.Details == nil {
		err.ErrStatus.Details = &metav1.StatusDetails{}
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: message})
	return err
}

// markDisruptionTarget records on a running pod why it is going, for its
// controller to read (a Job's podFailurePolicy on DisruptionTarget).
func (s *Server) markDisruptionTarget(ctx context.Context, req request, pod *corev1.Pod) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	err := s.store.Update(ctx, req.res.Key(req.namespace, req.name), &corev1.Pod{}, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: registry.Now()})
		return p, nil
	})
	return codec.StoreError(err, req.res.GroupResource(), req.name)
}
