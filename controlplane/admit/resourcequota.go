package admit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/quota"
)

// Quotas reads a namespace's ResourceQuotas (from a cache, or live when
// fresh says so) and writes a quota's status.
type Quotas interface {
	ResourceQuotas(ctx context.Context, namespace string, fresh bool) ([]*v1.ResourceQuota, error)
	UpdateQuotaStatus(ctx context.Context, q *v1.ResourceQuota) error
}

// errUncounted is a quota the controller has not counted yet.
var errUncounted = errors.New("status unknown")

// chargeTries bounds how often a create retries charging quotas that
// changed under it.
const chargeTries = 5

// ResourceQuota charges a new object's usage to its namespace's quotas
// (and a resized pod's growth, through pods/resize), as kube-apiserver's
// plugin of that name: a create that would take a quota
// over its hard limit is refused with "exceeded quota" (nothing is
// written), a pod that leaves a compute resource a quota limits unstated
// is refused, and otherwise each quota's status.used grows by the object's
// usage (compare-and-swap on the quota, retried) before the object is
// written; the resource quota controller later corrects what was charged
// for a create that failed.
type ResourceQuota struct {
	*admission.Handler
	quotas Quotas
	now    func() time.Time
	mu     sync.Mutex // serializes charges, so one server's creates do not race each other
}

// NewResourceQuota returns the plugin.
func NewResourceQuota(q Quotas) *ResourceQuota {
	return &ResourceQuota{Handler: admission.NewHandler(admission.Create, admission.Update), quotas: q, now: time.Now}
}

// charged is what a charges to quotas: a new object's usage, or what a
// resize adds to a pod's; ok is false for anything else.
func (p *ResourceQuota) charged(a admission.Attributes) (usage v1.ResourceList, ok bool) {
	gr := a.GetResource().GroupResource()
	if a.GetNamespace() == "" || !slices.Contains(quota.Tracked, gr) {
		return nil, false
	}
	switch {
	case a.GetOperation() == admission.Create && a.GetSubresource() == "":
		return quota.Usage(gr, a.GetObject(), p.now()), true
	case a.GetOperation() == admission.Update && a.GetSubresource() == "resize" && gr == podsResource:
		return quota.Growth(quota.Usage(gr, a.GetObject(), p.now()), quota.Usage(gr, a.GetOldObject(), p.now())), true
	}
	return nil, false
}

// Validate charges or refuses a create or a resize.
func (p *ResourceQuota) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	usage, ok := p.charged(a)
	if !ok || len(usage) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for try := range chargeTries {
		var quotas []*v1.ResourceQuota
		if quotas, err = p.quotas.ResourceQuotas(ctx, a.GetNamespace(), try > 0); err != nil {
			return admission.NewForbidden(a, err)
		}
		var charges []*v1.ResourceQuota
		if charges, err = p.check(a, quotas, usage); errors.Is(err, errUncounted) && try == 0 {
			continue // the cache may be behind the controller: read again
		} else if err != nil {
			return admission.NewForbidden(a, err)
		}
		if a.IsDryRun() {
			return nil
		}
		if err = p.charge(ctx, charges); err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to charge quota: %w", err))
	}
	return nil
}

// check returns the quotas usage counts against, with their new usage, or
// why the create is refused.
func (p *ResourceQuota) check(a admission.Attributes, quotas []*v1.ResourceQuota, usage v1.ResourceList) ([]*v1.ResourceQuota, error) {
	var charges []*v1.ResourceQuota
	for _, q := range quotas {
		if !quota.Matches(q.Spec.Scopes, a.GetObject()) || !covers(q.Spec.Hard, usage) {
			continue
		}
		if len(q.Status.Hard) == 0 {
			return nil, fmt.Errorf("%w for quota: %s, resources: %s", errUncounted, q.Name, strings.Join(names(q.Spec.Hard), ","))
		}
		if pod, ok := a.GetObject().(*v1.Pod); ok && len(usage) > 0 {
			if missing := quota.MissingCompute(pod, quota.ComputeNames(q.Status.Hard)); len(missing) > 0 {
				return nil, fmt.Errorf("failed quota: %s: must specify %s", q.Name, join(missing))
			}
		}
		requested := quota.Mask(usage, q.Status.Hard)
		used := quota.Add(q.Status.Used, requested)
		if over := quota.Exceeded(used, q.Status.Hard); len(over) > 0 {
			return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				quota.Describe(requested, over), quota.Describe(q.Status.Used, over), quota.Describe(q.Status.Hard, over))
		}
		charged := q.DeepCopy()
		charged.Status.Used = used
		charges = append(charges, charged)
	}
	return charges, nil
}

func (p *ResourceQuota) charge(ctx context.Context, charges []*v1.ResourceQuota) error {
	for _, q := range charges {
		if err := p.quotas.UpdateQuotaStatus(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// covers says whether hard limits something usage has.
func covers(hard, usage v1.ResourceList) bool {
	for name := range usage {
		if _, ok := hard[name]; ok {
			return true
		}
	}
	return false
}

func names(list v1.ResourceList) []string {
	out := make([]string, 0, len(list))
	for name := range list {
		out = append(out, string(name))
	}
	slices.Sort(out)
	return out
}

func join(list []v1.ResourceName) string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = string(n)
	}
	return strings.Join(out, ",")
}
