package agent

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
)

// TestPodCertificateVolume: a podCertificate projection holds the pod in
// ContainerCreating until the signer answers the request the agent makes
// (naming the pod, its service account and the node, owned by the pod);
// then the container reads the key and the issued chain. A signer that
// denies leaves the pod waiting with the denial in a FailedMount event.
func TestPodCertificateVolume(t *testing.T) {
	n := startTestNode(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go runTestSigner(ctx, t, n, "example.com/issuer", "example.com/refuser")

	pod := n.createPod(certPod("certified", "example.com/issuer"))
	p := n.waitPod("default", "certified", "running once issued", 60*time.Second, running)
	n.waitLog(pod, "c", "chain=1 key=1 bundle=2")
	reqs, err := n.client.CertificatesV1().PodCertificateRequests("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(reqs.Items) != 1 {
		t.Fatalf("requests %v, %v: want one", reqs, err)
	}
	r := reqs.Items[0]
	if r.Spec.PodUID != p.UID || string(r.Spec.NodeName) != n.cfg.NodeName || r.Spec.ServiceAccountName != "default" ||
		len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != p.UID || *r.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("request %+v", r)
	}

	refused := n.createPod(certPod("refused", "example.com/refuser"))
	n.waitEventMatching(refused, "FailedMount", func(m string) bool { return strings.Contains(m, `was permanently denied: reason="Policy"`) })
	n.waitPod("default", "refused", "still creating", 5*time.Second, func(p *v1.Pod) bool {
		w := waitingOf(p, "c")
		return w != nil && w.Reason == "ContainerCreating"
	})
}

func certPod(name, signer string) *v1.Pod {
	c := busybox("c", "sh", "-c", "while true; do echo chain=$(grep -c 'BEGIN CERTIFICATE' /c/chain.pem) "+
		"key=$(grep -c 'BEGIN PRIVATE KEY' /c/key.pem) bundle=$(grep -c BEGIN /c/bundle.pem); sleep 0.5; done")
	c.VolumeMounts = []v1.VolumeMount{{Name: "c", MountPath: "/c"}}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{c},
		Volumes: []v1.Volume{{Name: "c", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{PodCertificate: &v1.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256",
				KeyPath: "key.pem", CertificateChainPath: "chain.pem", CredentialBundlePath: "bundle.pem"}},
		}}}}}}}
}

// runTestSigner answers the requests of two signers until ctx ends,
// issuing for the first (two hours from a minute ago, refresh after one)
// and denying for the second, as a signer does through /status.
func runTestSigner(ctx context.Context, t *testing.T, n *testNode, issuer, refuser string) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Error(err)
		return
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "test signer"}, caKey)
	if err != nil {
		t.Error(err)
		return
	}
	pcrs := n.client.CertificatesV1().PodCertificateRequests("default")
	for ctx.Err() == nil {
		list, _ := pcrs.List(ctx, metav1.ListOptions{})
		for i := range list.Items {
			r := &list.Items[i]
			if len(r.Status.Conditions) > 0 || (r.Spec.SignerName != issuer && r.Spec.SignerName != refuser) {
				continue
			}
			cond := metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
				Reason: "Policy", Message: "not for you", LastTransitionTime: metav1.Now()}
			if r.Spec.SignerName == issuer {
				cond.Type, cond.Reason, cond.Message = certificatesv1.PodCertificateRequestConditionTypeIssued, "Signed", "issued"
				if err := issue(r, ca, caKey); err != nil {
					t.Error(err)
					return
				}
			}
			r.Status.Conditions = []metav1.Condition{cond}
			if _, err := pcrs.UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("update status: %v", err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// issue signs the request's key and sets the status times to the leaf's.
func issue(r *certificatesv1.PodCertificateRequest, ca *x509.Certificate, caKey crypto.Signer) error {
	req, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	if err != nil {
		return err
	}
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: notBefore, NotAfter: notBefore.Add(2 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, req.PublicKey, caKey)
	if err != nil {
		return err
	}
	r.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	r.Status.NotBefore, r.Status.NotAfter = &metav1.Time{Time: notBefore}, &metav1.Time{Time: leaf.NotAfter}
	r.Status.BeginRefreshAt = &metav1.Time{Time: notBefore.Add(time.Hour)}
	return nil
}
