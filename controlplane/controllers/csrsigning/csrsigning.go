// Package csrsigning signs approved CertificateSigningRequests with the
// cluster CA, as kube-controller-manager's csrsigning controller does, for
// the signers a node needs: kubernetes.io/kube-apiserver-client-kubelet
// (its client certificate) and kubernetes.io/kubelet-serving (its node
// API's serving certificate). A request its signer's rules refuse gets the
// Failed condition instead; other signers' requests are left alone.
package csrsigning

import (
	"context"
	"crypto/x509"
	"log/slog"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcertificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "csrsigning"

// checks are the signers this controller signs for, with their rules.
var checks = map[string]func(*x509.CertificateRequest, []certificatesv1.KeyUsage) error{
	certificatesv1.KubeAPIServerClientKubeletSignerName: pki.CheckNodeClient,
	certificatesv1.KubeletServingSignerName:             pki.CheckNodeServing,
	certificatesv1.KubeAPIServerClientSignerName:        pki.CheckAPIServerClient,
}

// Config is the signer's CA and the longest lifetime it gives (a request's
// spec.expirationSeconds may ask for less).
type Config struct {
	CA          *pki.CA
	MaxValidity time.Duration
}

// Controller signs approved requests.
type Controller struct {
	cfg    Config
	client typedcertificatesv1.CertificateSigningRequestsGetter
	csrs   certificateslisters.CertificateSigningRequestLister
	queue  workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New returns the constructor of a signer for cfg.
func New(cfg Config) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		inf := cc.Informers.Certificates().V1().CertificateSigningRequests()
		c := &Controller{cfg: cfg, client: cc.Client.CertificatesV1(), csrs: inf.Lister(), queue: component.NewQueue(controllerName)}
		err := informer.AddHandlers(informer.Handler{Name: "csr", Informer: inf.Informer(), Funcs: informer.OnChange(component.Enqueuer(c.queue))})
		return c, err
	}
}

// Run signs until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	check, ours := checks[csr.Spec.SignerName]
	if !ours || len(csr.Status.Certificate) > 0 || !has(csr, certificatesv1.CertificateApproved) || has(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	csr = csr.DeepCopy()
	req, err := pki.ParseCSR(csr.Spec.Request)
	if err == nil {
		err = check(req, csr.Spec.Usages)
	}
	if err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
			Message: err.Error(), LastUpdateTime: metav1.Now()})
		slog.Info("certificate request refused by its signer", "csr", name, "signer", csr.Spec.SignerName, "err", err)
	} else if csr.Status.Certificate, err = c.cfg.CA.SignRequest(req, csr.Spec.Usages, c.validity(csr)); err != nil {
		return err
	}
	_, err = c.client.CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// validity is what csr asks for, at most MaxValidity.
func (c *Controller) validity(csr *certificatesv1.CertificateSigningRequest) time.Duration {
	if s := csr.Spec.ExpirationSeconds; s != nil {
		return min(time.Duration(*s)*time.Second, c.cfg.MaxValidity)
	}
	return c.cfg.MaxValidity
}

func has(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == t && c.Status == corev1.ConditionTrue
	})
}
