package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/version"
)

// maxBody is how much of a response body a probe reads; the rest is ignored.
const maxBody = 10 << 10

// maxRedirects is how many same-host redirects an httpGet probe follows.
const maxRedirects = 10

// userAgent is sent by httpGet and grpc probes unless the probe sets its own.
var userAgent = "kube-probe/" + version.KubernetesMajor + "." + version.KubernetesMinor

// httpProber runs httpGet probes. It is safe for concurrent use; its transport
// keeps no connections (one connection per probe, like the kubelet).
type httpProber struct {
	transport *http.Transport
}

func newHTTPProber() *httpProber {
	return &httpProber{transport: &http.Transport{
		// Probe targets are pods with self-signed certificates; the kubelet
		// does not verify them either.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet semantics
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil, // never through a proxy from the environment
		DialContext:         probeDialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}}
}

// probe GETs the action's URL. 200 ≤ code < 400 is Success (the body, cut at
// 10 KiB, is the output); a redirect that was not followed is Warning; any
// other code, or a request that fails or times out, is Failure. An error means
// the request could not be built (bad port) or the body could not be read.
func (p *httpProber) probe(ctx context.Context, a *v1.HTTPGetAction, t Target, timeout time.Duration) (Result, string, error) {
	req, err := httpRequest(ctx, a, t)
	if err != nil {
		return Unknown, "", err
	}
	client := &http.Client{Timeout: timeout, Transport: p.transport, CheckRedirect: sameHostRedirects}
	res, err := client.Do(req)
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return Failure, "", fmt.Errorf("read response of %s: %w", req.URL, err)
	}
	body := string(b)
	switch {
	case res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest:
		return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
	case res.StatusCode >= http.StatusMultipleChoices:
		return Warning, "Probe terminated redirects, Response body: " + body, nil
	}
	return Success, body, nil
}

// sameHostRedirects follows redirects to the probed host only. A redirect to
// another host ends the request with the redirect response (counted as a
// Warning), so a probe never reaches a third party.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// httpRequest builds the GET for an httpGet action: scheme defaults to http,
// host to the pod IP, a named port is resolved against the container, and
// User-Agent and Accept are set unless the probe sets them (an empty Accept
// removes the header). A Host header becomes the request's Host.
func httpRequest(ctx context.Context, a *v1.HTTPGetAction, t Target) (*http.Request, error) {
	port, err := resolvePort(a.Port, t.Container)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = t.PodIP
	}
	u, err := url.Parse(a.Path)
	if err != nil { // keep a path url.Parse rejects as it is, like the kubelet
		u = &url.URL{Path: a.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("http probe request: %w", err)
	}
	req.Header = probeHeader(a.HTTPHeaders)
	req.Host = req.Header.Get("Host")
	return req, nil
}

func probeHeader(hs []v1.HTTPHeader) http.Header {
	h := make(http.Header, len(hs)+2)
	for _, x := range hs {
		h.Add(x.Name, x.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	return h
}
