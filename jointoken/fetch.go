package jointoken

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// FetchCA gets the cluster CA from server's /cacerts over a connection
// whose certificate must chain to a CA of hash want, and checks the CA it
// gets has that hash too. A server that cannot show it is refused before
// anything is sent.
func FetchCA(ctx context.Context, server, want string) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want https://host:port", server)
	}
	pinned := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The default verification needs the CA this fetches: it is replaced
		// by VerifyConnection's, against the CA the token pins.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return verifyPinned(cs, u.Hostname(), want) },
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: pinned}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/cacerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the cluster CA: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the cluster CA: %s %v", resp.Status, err)
	}
	ca, err := ParseCA(body)
	if err != nil {
		return nil, fmt.Errorf("the server's /cacerts: %w", err)
	}
	if got := CAHash(ca); got != want {
		return nil, fmt.Errorf("the server's CA has hash %s, the join token wants %s", got, want)
	}
	return body, nil
}

// verifyPinned wants the peer's chain to hold a CA of hash want that
// signed the leaf for host.
func verifyPinned(cs tls.ConnectionState, host, want string) error {
	var seen []string
	for _, c := range cs.PeerCertificates[1:] {
		got := CAHash(c)
		if got != want {
			seen = append(seen, got)
			continue
		}
		roots := x509.NewCertPool()
		roots.AddCert(c)
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: host})
		return err
	}
	return fmt.Errorf("the server's CA has hash %v, the join token wants %s: not sending the token", seen, want)
}
