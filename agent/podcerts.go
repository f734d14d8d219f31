package agent

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/agent/volumes"
	"github.com/skiff-lab/skiff/informer"
)

// errNotIssued: the signer has not answered the pod's request yet; the
// volume waits (and the pod with it), and the answer syncs the pod.
var errNotIssued = errors.New("credential bundle is not issued yet")

// podCertificates gets the certificates of pods' podCertificate
// projections as the kubelet's podcertificate manager does: for each
// source of each pod, a fresh key of the type asked for and a
// PodCertificateRequest naming the pod, its service account and this
// node, which the signer answers in its status; the issued key and chain
// are kept (in memory only) and replaced, once the signer's beginRefreshAt
// has passed, by those of a new request when it is issued. The requests
// are watched (those naming this node) from the first one on; an answer
// syncs the pod. Safe for concurrent use.
type podCertificates struct {
	ctx    context.Context
	client kubernetes.Interface
	node   string
	clock  clock.Clock
	sync   func(types.UID)

	watchOnce sync.Once
	requests  cache.Store

	mu    sync.Mutex
	creds map[certKey]*podCredential
}

// certKey names one podCertificate source of a pod.
type certKey struct {
	pod    types.UID
	volume string
	source int
}

// podCredential is what one source has: the issued key and chain, and the
// request being answered, with its key.
type podCredential struct {
	key, chain   []byte
	refreshAt    time.Time
	pending      string // namespace/name of the request waiting for its answer
	pendingKey   []byte
	refused      error // the signer denied or failed the request: final
	requestError error // the last request could not be made
}

func newPodCertificates(ctx context.Context, client kubernetes.Interface, node string, clk clock.Clock, sync func(types.UID)) *podCertificates {
	return &podCertificates{ctx: ctx, client: client, node: node, clock: clk, sync: sync, creds: map[certKey]*podCredential{}}
}

// get returns the key and chain of the source, asking for them when there
// are none (errNotIssued until the signer answers) or when they are due
// for refresh (the current ones meanwhile).
func (p *podCertificates) get(ctx context.Context, pod *v1.Pod, volume string, source int, src *v1.PodCertificateProjection) (volumes.Credentials, error) {
	p.watchOnce.Do(p.watchRequests)
	key := certKey{pod.UID, volume, source}
	p.mu.Lock()
	c := p.creds[key]
	if c == nil {
		c = &podCredential{}
		p.creds[key] = c
	}
	p.collect(c)
	ask := c.refused == nil && c.pending == "" && (c.chain == nil || !p.clock.Now().Before(c.refreshAt))
	p.mu.Unlock()
	if ask {
		name, keyPEM, err := p.request(ctx, pod, src)
		p.mu.Lock()
		c.pending, c.pendingKey, c.requestError = name, keyPEM, err
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case c.refused != nil:
		return volumes.Credentials{}, c.refused
	case c.chain != nil:
		return volumes.Credentials{Key: c.key, Chain: c.chain}, nil
	case c.requestError != nil:
		return volumes.Credentials{}, c.requestError
	}
	return volumes.Credentials{}, errNotIssued
}

// collect takes the signer's answer to the pending request, if there is one.
func (p *podCertificates) collect(c *podCredential) {
	if c.pending == "" {
		return
	}
	obj, ok, _ := p.requests.GetByKey(c.pending)
	if !ok {
		return
	}
	r := obj.(*certificatesv1.PodCertificateRequest)
	for _, cond := range r.Status.Conditions {
		if cond.Status != metav1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			c.key, c.chain = c.pendingKey, cleanChain(r.Status.CertificateChain)
			c.refreshAt = r.Status.BeginRefreshAt.Time
			c.pending, c.pendingKey = "", nil
		case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			c.refused = fmt.Errorf("PodCertificateRequest %s was permanently %s: reason=%q message=%q",
				c.pending, map[string]string{"Denied": "denied", "Failed": "failed"}[cond.Type], cond.Reason, cond.Message)
			c.pending, c.pendingKey = "", nil
		}
	}
}

// request makes a key and asks the signer for its certificate, returning
// the request's namespace/name and the key.
func (p *podCertificates) request(ctx context.Context, pod *v1.Pod, src *v1.PodCertificateProjection) (string, []byte, error) {
	key, err := newPodKey(src.KeyType)
	if err != nil {
		return "", nil, err
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return "", nil, fmt.Errorf("stub certificate request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", nil, err
	}
	node, err := p.client.CoreV1().Nodes().Get(ctx, p.node, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("get node: %w", err)
	}
	sa, err := p.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, pod.Spec.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("get service account: %w", err)
	}
	r := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "req-", Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: src.SignerName,
			PodName: pod.Name, PodUID: pod.UID, ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID,
			NodeName: types.NodeName(p.node), NodeUID: node.UID, MaxExpirationSeconds: src.MaxExpirationSeconds,
			StubPKCS10Request: stub, UnverifiedUserAnnotations: src.UserAnnotations},
	}
	made, err := p.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("create PodCertificateRequest: %w", err)
	}
	return made.Namespace + "/" + made.Name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newPodKey generates a private key of a podCertificate key type.
func newPodKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err := ed25519.GenerateKey(rand.Reader)
		return key, err
	}
	return nil, fmt.Errorf("unknown key type %q", keyType)
}

// cleanChain re-encodes the chain's blocks as CERTIFICATE blocks, without
// headers or anything between them.
func cleanChain(chain string) []byte {
	var out []byte
	rest := []byte(chain)
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return out
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})...)
	}
}

// watchRequests starts the cache of the requests naming this node; an
// answer syncs the pod the request is for.
func (p *podCertificates) watchRequests() {
	factory := informers.NewSharedInformerFactoryWithOptions(p.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", p.node).String()
	}))
	inf := factory.Certificates().V1().PodCertificateRequests().Informer()
	_, _ = inf.AddEventHandler(informer.OnChange(func(obj any) {
		if r, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
			p.sync(r.Spec.PodUID)
		}
	}))
	p.requests = inf.GetStore()
	factory.Start(p.ctx.Done())
}

// forget drops what the pod's sources had.
func (p *podCertificates) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.creds {
		if key.pod == uid {
			delete(p.creds, key)
		}
	}
}
