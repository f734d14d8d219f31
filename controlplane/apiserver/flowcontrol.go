package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fcbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// API priority and fairness, as kube-apiserver has it: every request,
// once its user is known (impersonation included), is classified by the
// FlowSchemas into a priority level, and waits in that level's fair queues
// for a seat or is rejected with 429. k8s.io/apiserver's filter and
// controller do it; the server gives them the request's info and starts
// with kube-apiserver's mandatory and suggested configuration.

// requestWaitLimit is how long a request without a deadline may wait in
// its queue: a quarter of kube-apiserver's default request timeout.
const requestWaitLimit = 15 * time.Second

// requestInfos describes requests as kube-apiserver's request info does.
var requestInfos = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// longRunning are the requests that hold no seat while they run (a watch
// holds one until it is established), as kube-apiserver's
// --long-running-request check.
// The journey page's event stream is one too.
var longRunning = func() genericrequest.LongRunningRequestCheck {
	basic := genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	return func(r *http.Request, info *genericrequest.RequestInfo) bool {
		return r.URL.Path == uiEventsPath || basic(r, info)
	}
}()

// SetFlowControl puts every later request under fc's priority and
// fairness; fc's controller (Run) keeps it following the stored
// FlowSchemas and PriorityLevelConfigurations.
func (s *Server) SetFlowControl(fc utilflowcontrol.Interface) {
	estimate := fcrequest.NewWorkEstimator(noObjectCounts, fc.GetInterestedWatchCount, fcrequest.DefaultWorkEstimatorConfig(), fc.GetMaxSeats)
	h := genericfilters.WithPriorityAndFairness(http.HandlerFunc(s.serve), longRunning, fc, estimate, requestWaitLimit)
	s.flowControlled.Store(&h)
}

// RunFlowControl keeps fc following the stored FlowSchemas and
// PriorityLevelConfigurations (once its informers have synced) and the
// priority and fairness concurrency watermarks, until ctx ends.
func RunFlowControl(ctx context.Context, fc utilflowcontrol.Interface) {
	genericfilters.StartPriorityAndFairnessWatermarkMaintenance(ctx.Done())
	if err := fc.Run(ctx.Done()); err != nil {
		slog.Error("priority and fairness", "err", err)
	}
}

// noObjectCounts: the server keeps no per-resource object counts, so a
// list is estimated at the minimum width.
func noObjectCounts(string) (storage.Stats, error) {
	return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
}

// flowControl serves r through priority and fairness when it is on and r
// has a user (the public and, without an authorizer, the anonymous paths
// have none), else directly.
func (s *Server) flowControl(w http.ResponseWriter, r *http.Request) {
	h := s.flowControlled.Load()
	if _, ok := genericrequest.UserFrom(r.Context()); h == nil || !ok {
		s.serve(w, r)
		return
	}
	info, err := requestInfos.NewRequestInfo(r)
	if err != nil {
		s.serve(w, r)
		return
	}
	(*h).ServeHTTP(w, r.WithContext(genericrequest.WithRequestInfo(r.Context(), info)))
}

// ensureFlowControlConfig creates kube-apiserver's mandatory and suggested
// PriorityLevelConfigurations and FlowSchemas that are missing, marked for
// automatic update as kube-apiserver marks them.
func (s *Server) ensureFlowControlConfig(ctx context.Context) error {
	var objs []runtime.Object
	for _, pl := range append(fcbootstrap.MandatoryPriorityLevelConfigurations, fcbootstrap.SuggestedPriorityLevelConfigurations...) {
		objs = append(objs, pl.DeepCopy())
	}
	for _, fs := range append(fcbootstrap.MandatoryFlowSchemas, fcbootstrap.SuggestedFlowSchemas...) {
		objs = append(objs, fs.DeepCopy())
	}
	for _, obj := range objs {
		m := registry.ObjectMeta(obj)
		metav1.SetMetaDataAnnotation(m, flowcontrolv1.AutoUpdateAnnotationKey, "true")
		plural := "flowschemas"
		if _, ok := obj.(*flowcontrolv1.PriorityLevelConfiguration); ok {
			plural = "prioritylevelconfigurations"
		}
		if err := s.createIfMissing(ctx, s.resourceFor(plural), obj); err != nil {
			return fmt.Errorf("%s %s: %w", plural, m.Name, err)
		}
	}
	return nil
}
