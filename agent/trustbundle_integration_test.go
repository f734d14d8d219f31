package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// TestClusterTrustBundleVolume: a projected clusterTrustBundle source
// (a signer's bundles, every label) holds the pod in ContainerCreating
// with a FailedMount event while no bundle matches; once one exists the
// container reads its certificate, and a second bundle of the signer
// reaches the running container, each certificate once.
func TestClusterTrustBundleVolume(t *testing.T) {
	n := startTestNode(t)
	c := busybox("c", "sh", "-c", "while true; do echo certs=$(grep -c BEGIN /ca/bundle.pem); sleep 0.5; done")
	c.VolumeMounts = []v1.VolumeMount{{Name: "ca", MountPath: "/ca"}}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trusting"}, Spec: v1.PodSpec{Containers: []v1.Container{c},
		Volumes: []v1.Volume{{Name: "ca", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/ca"), LabelSelector: &metav1.LabelSelector{}, Path: "bundle.pem"}},
		}}}}}}})
	n.waitEventMatching(pod, "FailedMount", func(m string) bool {
		return strings.Contains(m, `clustertrustbundles.certificates.k8s.io "of signer \"example.com/ca\"`)
	})
	n.waitPod("default", "trusting", "container creating", 10*time.Second, func(p *v1.Pod) bool {
		w := waitingOf(p, "c")
		return w != nil && w.Reason == "ContainerCreating"
	})
	first, second := testCAPEM(t, "first"), testCAPEM(t, "second")
	n.createTrustBundle("example.com:ca:1", first)
	n.waitPod("default", "trusting", "running once a bundle exists", 60*time.Second, running)
	n.waitLog(pod, "c", "certs=1")
	n.createTrustBundle("example.com:ca:2", second+first)
	n.waitLog(pod, "c", "certs=2")
}

func (n *testNode) createTrustBundle(name, pem string) {
	n.t.Helper()
	b := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/ca", TrustBundle: pem}}
	if _, err := n.client.CertificatesV1().ClusterTrustBundles().Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() {
		_ = n.client.CertificatesV1().ClusterTrustBundles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// testCAPEM makes a self-signed CA certificate named cn, as PEM.
func testCAPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: cn}, key)
	if err != nil {
		t.Fatal(err)
	}
	data, err := certutil.EncodeCertificates(cert)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
