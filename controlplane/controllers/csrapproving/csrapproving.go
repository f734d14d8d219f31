// Package csrapproving approves the certificate requests a node makes for
// itself, as kube-controller-manager's csrapproving controller does with
// the node bootstrapping roles (skiff has no RBAC yet, so the rules are
// here): a node client certificate (signer
// kubernetes.io/kube-apiserver-client-kubelet) asked by a bootstrap token's
// user for a node that is not registered yet, or by that node itself
// (renewal); a node serving certificate (kubernetes.io/kubelet-serving)
// asked by the node itself for names and addresses its Node object has.
// Anything else stays Pending for `kubectl certificate approve|deny`.
package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	typedcertificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "csrapproving"

// Controller approves nodes' own certificate requests.
type Controller struct {
	client typedcertificatesv1.CertificateSigningRequestsGetter
	csrs   certificateslisters.CertificateSigningRequestLister
	nodes  corelisters.NodeLister
	queue  workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the approver on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	csrs, nodes := cc.Informers.Certificates().V1().CertificateSigningRequests(), cc.Informers.Core().V1().Nodes()
	c := &Controller{client: cc.Client.CertificatesV1(), csrs: csrs.Lister(), nodes: nodes.Lister(), queue: component.NewQueue(controllerName)}
	err := informer.AddHandlers(
		informer.Handler{Name: "csr", Informer: csrs.Informer(), Funcs: informer.OnChange(component.Enqueuer(c.queue))},
		// A node's addresses decide its serving requests: look again.
		informer.Handler{Name: "node", Informer: nodes.Informer(), Funcs: informer.OnChange(func(any) { c.enqueuePending() })},
	)
	return c, err
}

// Run approves until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

func (c *Controller) enqueuePending() {
	all, _ := c.csrs.List(labels.Everything())
	for _, csr := range all {
		if len(csr.Status.Conditions) == 0 {
			c.queue.Add(csr.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && decided(csr)) {
		return nil
	} else if err != nil {
		return err
	}
	why, ok := c.approvable(csr)
	if !ok {
		slog.Debug("certificate request left pending", "csr", name, "requestor", csr.Spec.Username, "why", why)
		return nil
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved",
		Message: why, LastUpdateTime: metav1.Now()})
	_, err = c.client.CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{})
	if err == nil {
		slog.Info("certificate request approved", "csr", name, "requestor", csr.Spec.Username, "signer", csr.Spec.SignerName)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
}

// approvable says why csr is approved, or why not.
func (c *Controller) approvable(csr *certificatesv1.CertificateSigningRequest) (string, bool) {
	req, err := pki.ParseCSR(csr.Spec.Request)
	if err != nil {
		return err.Error(), false
	}
	node := strings.TrimPrefix(req.Subject.CommonName, pki.NodeUserPrefix)
	self := csr.Spec.Username == req.Subject.CommonName
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if err := pki.CheckNodeClient(req, csr.Spec.Usages); err != nil {
			return err.Error(), false
		}
		if self {
			return "a node renewing its client certificate", true
		}
		if !slices.Contains(csr.Spec.Groups, bootstrapapi.BootstrapDefaultGroup) {
			return "neither a bootstrapper nor the node itself", false
		}
		if _, err := c.nodes.Get(node); err == nil {
			return fmt.Sprintf("node %s is registered: only it may renew its certificate", node), false
		}
		return "a bootstrapper joining node " + node, true
	case certificatesv1.KubeletServingSignerName:
		if err := pki.CheckNodeServing(req, csr.Spec.Usages); err != nil {
			return err.Error(), false
		}
		if !self {
			return "only the node itself asks for its serving certificate", false
		}
		return servingMatchesNode(c.nodes, node, req)
	}
	return "not a node's signer", false
}

// servingMatchesNode wants every name of req among the Node's name and
// DNS addresses, every IP among its IP addresses.
func servingMatchesNode(nodes corelisters.NodeLister, name string, req *x509.CertificateRequest) (string, bool) {
	node, err := nodes.Get(name)
	if err != nil {
		return "node " + name + " is not registered", false
	}
	dns, ips := []string{node.Name}, []string{}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			ips = append(ips, net.ParseIP(a.Address).String())
		default:
			dns = append(dns, a.Address)
		}
	}
	for _, n := range req.DNSNames {
		if !slices.Contains(dns, n) {
			return fmt.Sprintf("DNS name %s is not node %s's", n, name), false
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.Contains(ips, ip.String()) {
			return fmt.Sprintf("address %s is not node %s's", ip, name), false
		}
	}
	return "node " + name + "'s own serving certificate", true
}
