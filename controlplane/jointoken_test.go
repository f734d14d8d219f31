package controlplane_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/jointoken"
)

// TestJoinToken checks the server's join token: written once, 0600,
// carrying the hash of the cluster's CA and a bootstrap token the API
// server admits as system:bootstrap:<id> (discovery only, for now);
// a wrong secret, an expired or a deleted token are refused.
func TestJoinToken(t *testing.T) {
	s := servertest.Start(t)
	path := filepath.Join(s.Config.DataDir, "server", "token")
	tok := s.JoinToken()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, fi.Mode())
	}
	if want := jointoken.CAHash(serverCA(t, s)); tok.CAHash != want {
		t.Errorf("token's CA hash %s, the CA's %s", tok.CAHash, want)
	}
	if code := getAs(t, s, tok.Bearer(), "/api"); code != 200 {
		t.Errorf("discovery with the join token: %d, want 200", code)
	}
	if code := getAs(t, s, tok.Bearer(), "/api/v1/namespaces"); code != 403 {
		t.Errorf("namespaces with the join token: %d, want 403", code)
	}
	wrong := tok
	wrong.Secret = "0000000000000000"
	if code := getAs(t, s, wrong.Bearer(), "/api"); code != 401 {
		t.Errorf("a wrong secret: %d, want 401", code)
	}

	ctx := context.Background()
	secrets := s.Client().CoreV1().Secrets(metav1.NamespaceSystem)
	expired := jointoken.Secret("zzzzzz", "0123456789abcdef", "", time.Now().Add(-time.Minute), nil)
	if _, err := secrets.Create(ctx, expired, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := getAs(t, s, "zzzzzz.0123456789abcdef", "/api"); code != 401 {
		t.Errorf("an expired token: %d, want 401", code)
	}
	soon := jointoken.Secret("yyyyyy", "0123456789abcdef", "", time.Now().Add(2*time.Second), nil)
	if _, err := secrets.Create(ctx, soon, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{expired.Name, soon.Name} {
		waitFor(t, "the token cleaner to delete "+name, func() bool {
			_, err := secrets.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
	if _, err := secrets.Get(ctx, "bootstrap-token-"+tok.ID, metav1.GetOptions{}); err != nil {
		t.Errorf("the join token, which does not expire: %v", err)
	}

	made, err := jointoken.Create(ctx, s.Client(), serverCA(t, s), time.Hour, "lab", []string{"system:bootstrappers:lab"})
	if err != nil {
		t.Fatal(err)
	}
	if code := getAs(t, s, made.Bearer(), "/api"); code != 200 || made.CAHash != tok.CAHash {
		t.Errorf("a created token: %d, hash %s", code, made.CAHash)
	}
	all, err := jointoken.List(ctx, s.Client())
	if err != nil {
		t.Fatal(err)
	}
	// The server token, which servers join with, is in the servers' group.
	infos := slices.DeleteFunc(slices.Clone(all), func(i jointoken.Info) bool {
		return slices.Equal(i.Groups, []string{jointoken.ServersGroup}) && i.Expires.IsZero()
	})
	if len(all) != 3 || len(infos) != 2 || infos[0].ID != tok.ID || !infos[0].Expires.IsZero() || infos[1].ID != made.ID ||
		time.Until(infos[1].Expires) < 59*time.Minute || strings.Join(infos[1].Usages, ",") != "authentication,signing" ||
		infos[1].Description != "lab" || strings.Join(infos[1].Groups, ",") != "system:bootstrappers:lab" {
		t.Errorf("tokens listed: %+v", all)
	}
	if id, err := jointoken.Delete(ctx, s.Client(), made.String()); err != nil || id != made.ID {
		t.Fatalf("delete by join token: %q, %v", id, err)
	}
	if _, err := jointoken.Create(ctx, s.Client(), serverCA(t, s), 0, "", []string{"admins"}); err == nil {
		t.Error("a token in a group outside system:bootstrappers: was made")
	}

	s.Restart()
	if again := s.JoinToken(); again != tok {
		t.Errorf("a restart changed the token: %+v, was %+v", again, tok)
	}
	if err := secrets.Delete(ctx, "bootstrap-token-"+tok.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := getAs(t, s, tok.Bearer(), "/api"); code != 401 {
		t.Errorf("a deleted token: %d, want 401", code)
	}
	s.Restart()
	if _, err := secrets.Get(ctx, "bootstrap-token-"+tok.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a restart brought the deleted token back: %v", err)
	}
}

func serverCA(t *testing.T, s *servertest.Server) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Config.DataDir, "server", "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// getAs GETs path with a bearer token over the cluster CA's TLS and
// returns the status code.
func getAs(t *testing.T, s *servertest.Server, token, path string) int {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.RESTConfig())
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
