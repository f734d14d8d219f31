package controlplane

import (
	"context"
	"log/slog"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	"k8s.io/metrics/pkg/apis/metrics"
)

// automanagedLabel marks the APIServices the server registers for what it
// serves itself, as kube-apiserver's autoregistration does.
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// localAPIServices are the Local APIServices (no Service: served by the
// API server itself) of the group versions gvs, the first group the most
// preferred; the metrics API has metrics-server's priorities, as if it
// were that server's.
func localAPIServices(gvs []schema.GroupVersion) []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	groups := map[string]int32{}
	for _, gv := range gvs {
		if _, ok := groups[gv.Group]; !ok {
			groups[gv.Group] = int32(18000 - 50*len(groups))
		}
		svc := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group,
			Labels: map[string]string{automanagedLabel: "onstart"}},
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: groups[gv.Group], VersionPriority: 15}}
		if gv.Group == metrics.GroupName {
			svc.Spec.GroupPriorityMinimum, svc.Spec.VersionPriority = 100, 100
		}
		out = append(out, svc)
	}
	return out
}

// registerAPIServices creates or updates the Local APIServices of gvs
// through client, retrying with back-off until it succeeds or ctx ends.
func registerAPIServices(ctx context.Context, client aggregatorclient.APIServicesGetter, gvs []schema.GroupVersion) {
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 12, Cap: 30 * time.Second}
	for _, want := range localAPIServices(gvs) {
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			err := ensureAPIService(ctx, client, want)
			if err != nil {
				slog.Info("registering APIService", "apiservice", want.Name, "err", err)
			}
			return err == nil, nil
		})
		if err != nil {
			slog.Warn("APIService not registered", "apiservice", want.Name, "err", err)
		}
	}
}

func ensureAPIService(ctx context.Context, client aggregatorclient.APIServicesGetter, want *apiregistrationv1.APIService) error {
	have, err := client.APIServices().Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = client.APIServices().Create(ctx, want, metav1.CreateOptions{})
		return err
	} else if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(have.Spec, want.Spec) && have.Labels[automanagedLabel] == "onstart" {
		return nil
	}
	have.Spec = want.Spec
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	have.Labels[automanagedLabel] = "onstart"
	_, err = client.APIServices().Update(ctx, have, metav1.UpdateOptions{})
	return err
}
