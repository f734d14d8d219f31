// Package admissionpolicystatus type-checks each ValidatingAdmissionPolicy
// against the schemas of the kinds it matches and records what it found in
// status.typeChecking, as kube-controller-manager's
// validatingadmissionpolicy-status controller does: an expression that
// names a field the kind lacks, or compares an int with a string, is a
// warning there (the policy still runs), with the expression's field path.
package admissionpolicystatus

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes/scheme"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/openapi"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "validatingadmissionpolicy-status"

// Controller writes the type-checking status of policies; its queue holds
// policy names.
type Controller struct {
	client   admissionclient.ValidatingAdmissionPoliciesGetter
	policies admissionlisters.ValidatingAdmissionPolicyLister
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	checker  *validating.TypeChecker
	queue    workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on the shared informers. Built-in kinds are
// checked against the server's compiled-in schemas, custom resources
// against the schemas the server publishes.
func New(cc component.Context) (component.Component, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cc.Client.Discovery()))
	schemas := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme, apiextensionsscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: cc.Client.Discovery()})
	policies := cc.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies()
	c := &Controller{client: cc.Client.AdmissionregistrationV1(), policies: policies.Lister(), mapper: mapper,
		checker: &validating.TypeChecker{SchemaResolver: schemas, RestMapper: mapper}, queue: component.NewQueue(controllerName)}
	err := informer.AddHandlers(informer.Handler{Name: "validatingadmissionpolicy", Informer: policies.Informer(),
		Funcs: informer.OnChange(func(obj any) {
			if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
				c.queue.Add(p.Name)
			}
		})})
	return c, err
}

// Run checks policies until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

// sync checks a policy whose spec changed since it was last checked.
func (c *Controller) sync(ctx context.Context, name string) error {
	p, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if p.Generation <= p.Status.ObservedGeneration {
		return nil
	}
	// The kinds a policy matches may be custom resources defined a moment
	// ago: discovery is read afresh for each check.
	c.mapper.Reset()
	update := p.DeepCopy()
	update.Status.ObservedGeneration = p.Generation
	update.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: c.checker.Check(p)}
	_, err = c.client.ValidatingAdmissionPolicies().UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer version is on its way through the informer
	}
	return err
}
