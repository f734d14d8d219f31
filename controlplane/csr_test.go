package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// request is a key and a CSR for it.
type request struct {
	keyPEM, csrPEM []byte
}

func newRequest(t *testing.T, cn string, orgs []string, dns []string, ips ...string) request {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return request{keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		csrPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}
}

func createCSR(t *testing.T, c kubernetes.Interface, name, signer string, r request, usages ...certificatesv1.KeyUsage) {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: r.csrPEM, SignerName: signer, Usages: usages}}
	if _, err := c.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// issued waits for csr name's certificate.
func issued(t *testing.T, c kubernetes.Interface, name string) *x509.Certificate {
	t.Helper()
	var cert []byte
	waitFor(t, name+" issued", func() bool {
		csr, err := c.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		cert = csr.Status.Certificate
		return err == nil && len(cert) > 0
	})
	block, _ := pem.Decode(cert)
	parsed, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// conditionsAfter returns csr name's condition types after a while.
func conditionsAfter(t *testing.T, c kubernetes.Interface, name string) []certificatesv1.RequestConditionType {
	t.Helper()
	time.Sleep(2 * time.Second)
	csr, err := c.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []certificatesv1.RequestConditionType
	for _, cond := range csr.Status.Conditions {
		out = append(out, cond.Type)
	}
	return out
}

func clientAs(t *testing.T, s *servertest.Server, edit func(*rest.Config)) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.RESTConfig())
	edit(cfg)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNodeCertificatesThroughCSRs follows a node's certificates through
// the CSR API: a bootstrapper's request for a new node's client
// certificate is approved and signed (by the cluster CA, within
// --node-cert-validity) and the certificate is that node's identity; the
// node's own serving request is approved for its Node's addresses only; a
// bootstrapper may not take a registered node's name nor approve; an
// admin's denial stands; a request its signer's rules refuse fails.
func TestNodeCertificatesThroughCSRs(t *testing.T) {
	s := servertest.StartWith(t, func(cfg *controlplane.Config) { cfg.NodeCertValidity = 2 * time.Hour })
	admin := s.Client()
	tok := s.JoinToken()
	boot := clientAs(t, s, func(cfg *rest.Config) { cfg.BearerToken = tok.Bearer() })
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

	n1 := newRequest(t, "system:node:n1", []string{"system:nodes"}, nil)
	createCSR(t, boot, "n1-client", certificatesv1.KubeAPIServerClientKubeletSignerName, n1, clientUsages...)
	cert := issued(t, admin, "n1-client")
	if _, err := cert.Verify(x509.VerifyOptions{Roots: caPool(t, s), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("n1's certificate: %v", err)
	}
	if cert.Subject.CommonName != "system:node:n1" || time.Until(cert.NotAfter) > 2*time.Hour {
		t.Errorf("n1's certificate: %s until %s", cert.Subject, cert.NotAfter)
	}
	node := clientAs(t, s, func(cfg *rest.Config) {
		cfg.CertData, cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), n1.keyPEM
	})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.0.2.5"}, {Type: corev1.NodeHostName, Address: "n1.lab"}}}}
	if _, err := node.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("n1 registering with its certificate: %v", err)
	}

	servingUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	createCSR(t, node, "n1-serving", certificatesv1.KubeletServingSignerName,
		newRequest(t, "system:node:n1", []string{"system:nodes"}, []string{"n1", "n1.lab"}, "192.0.2.5"), servingUsages...)
	if serving := issued(t, admin, "n1-serving"); len(serving.IPAddresses) != 1 || serving.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("n1's serving certificate: %v %v", serving.IPAddresses, serving.ExtKeyUsage)
	}
	createCSR(t, node, "n1-serving-elsewhere", certificatesv1.KubeletServingSignerName,
		newRequest(t, "system:node:n1", []string{"system:nodes"}, nil, "192.0.2.99"), servingUsages...)

	createCSR(t, boot, "n1-again", certificatesv1.KubeAPIServerClientKubeletSignerName,
		newRequest(t, "system:node:n1", []string{"system:nodes"}, nil), clientUsages...)
	for _, name := range []string{"n1-serving-elsewhere", "n1-again"} {
		if got := conditionsAfter(t, admin, name); len(got) != 0 {
			t.Errorf("%s: %v, want Pending", name, got)
		}
	}

	pending, err := admin.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "n1-again", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pending.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := boot.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "n1-again", pending, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a bootstrapper approving: %v, want Forbidden", err)
	}
	patched, err := admin.CertificatesV1().CertificateSigningRequests().Patch(context.Background(), "n1-again", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patched":"true"}},"status":{"conditions":[{"type":"Checked","status":"True","reason":"Test"}]}}`),
		metav1.PatchOptions{}, "approval")
	if err != nil || len(patched.Status.Conditions) != 1 || patched.Status.Conditions[0].Type != "Checked" || patched.Annotations["patched"] != "true" {
		t.Errorf("a merge patch of /approval: %v, conditions %v, annotations %v", err, patched.Status.Conditions, patched.Annotations)
	}
	patched.Status.Conditions = append(patched.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "Test"})
	denied, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "n1-again", patched, metav1.UpdateOptions{})
	if err != nil || len(denied.Status.Conditions) != 2 || denied.Status.Conditions[1].Type != certificatesv1.CertificateDenied {
		t.Fatalf("an /approval update adding a denial: %v %+v", err, denied)
	}
	pending.ResourceVersion = denied.ResourceVersion
	pending.Status.Conditions[0].Type = certificatesv1.CertificateDenied
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "n1-again", pending, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := conditionsAfter(t, admin, "n1-again"); len(got) != 1 || got[0] != certificatesv1.CertificateDenied {
		t.Errorf("denied: %v", got)
	}

	createCSR(t, admin, "not-a-node", certificatesv1.KubeAPIServerClientKubeletSignerName,
		newRequest(t, "system:node:n2", []string{"admins"}, nil), clientUsages...)
	bad, err := admin.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "not-a-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "not-a-node", bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the signer to fail not-a-node", func() bool {
		return slices.Contains(conditionsAfter(t, admin, "not-a-node"), certificatesv1.CertificateFailed)
	})
}

func caPool(t *testing.T, s *servertest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(serverCA(t, s))
	return pool
}

// TestUserCertificateThroughCSR: as on kubeadm clusters, a user's request
// to kubernetes.io/kube-apiserver-client, once an admin approves it, is
// signed, and the certificate is that user's identity, which RBAC limits;
// a request for the system:masters group is refused at create.
func TestUserCertificateThroughCSR(t *testing.T) {
	s := servertest.Start(t)
	admin := s.Client()
	ctx := context.Background()
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	jane := newRequest(t, "jane", []string{"devs"}, nil)
	createCSR(t, admin, "jane", certificatesv1.KubeAPIServerClientSignerName, jane, certificatesv1.UsageClientAuth)
	if got := conditionsAfter(t, admin, "jane"); len(got) != 0 {
		t.Fatalf("jane's request before approval: %v, want Pending (no one approves it but an admin)", got)
	}
	csr, err := csrs.Get(ctx, "jane", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved,
		Status: corev1.ConditionTrue, Reason: "KubectlApprove"}}
	if _, err := csrs.UpdateApproval(ctx, "jane", csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cert := issued(t, admin, "jane")
	if cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"devs"}) ||
		!slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("jane's certificate: %v %v", cert.Subject, cert.ExtKeyUsage)
	}
	signed, _ := csrs.Get(ctx, "jane", metav1.GetOptions{})
	asJane := clientAs(t, s, func(c *rest.Config) { c.CertData, c.KeyData = signed.Status.Certificate, jane.keyPEM })
	review, err := asJane.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "jane" || !slices.Contains(review.Status.UserInfo.Groups, "devs") {
		t.Errorf("whoami with jane's certificate: %v %+v", err, review)
	}
	if _, err := asJane.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("jane listing kube-system's secrets: %v, want Forbidden", err)
	}

	masters := newRequest(t, "mallory", []string{"system:masters"}, nil)
	_, err = csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "mallory"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: masters.csrPEM, SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:masters group is not allowed") {
		t.Errorf("a request for system:masters: %v, want Forbidden", err)
	}
}

// TestApproveAndSignPerSigner: the CertificateApproval and
// CertificateSigning admission plugins. A user whose role may update
// certificatesigningrequests/approval and /status, and approve and sign
// for example.com/* only, approves and signs example.com/team's requests
// and is refused, with the signer named, for other.com's.
func TestApproveAndSignPerSigner(t *testing.T) {
	s := servertest.Start(t)
	admin := s.Client()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "example-approver"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/approval", "certificatesigningrequests/status"},
			Verbs: []string{"update"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"},
			Verbs: []string{"approve", "sign"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "example-approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "approver"}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(s.RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "approver"}
	approver := kubernetes.NewForConfigOrDie(cfg)
	createCSR(t, admin, "team", "example.com/team", newRequest(t, "team", nil, nil), certificatesv1.UsageClientAuth)
	createCSR(t, admin, "other-approve", "other.com/team", newRequest(t, "other", nil, nil), certificatesv1.UsageClientAuth)
	createCSR(t, admin, "other-sign", "other.com/team", newRequest(t, "other", nil, nil), certificatesv1.UsageClientAuth)

	approve := func(c kubernetes.Interface, name string) error {
		csr, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved,
			Status: corev1.ConditionTrue, Reason: "Test"}}
		_, err = c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{})
		return err
	}
	sign := func(name string) error {
		csr, err := approver.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		csr.Status.Certificate = issuedBySomeone(t)
		_, err = approver.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		return err
	}
	// The binding reaches the authorizer's cache shortly.
	servertest.Eventually(t, "approver approves example.com/team", 10*time.Second, func(context.Context) (bool, string) {
		err := approve(approver, "team")
		return err == nil, fmt.Sprint(err)
	})
	if err := sign("team"); err != nil {
		t.Errorf("signing for example.com/team: %v", err)
	}
	if err := approve(admin, "other-sign"); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{"approving": approve(approver, "other-approve"), "signing": sign("other-sign")} {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `signerName "other.com/team"`) {
			t.Errorf("%s for other.com/team: %v, want Forbidden naming the signer", what, err)
		}
	}
}

// issuedBySomeone is a self-signed certificate in PEM, as a signer outside
// the cluster would put in a request's status.
func issuedBySomeone(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "team"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
