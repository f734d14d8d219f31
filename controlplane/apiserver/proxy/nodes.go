package proxy

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
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// NodeGetter reads the stored Node called name.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// Nodes reaches the nodes' APIs: with the server's client certificate,
// checking the nodes' serving certificates against the cluster CA, over
// HTTP/1.1 (streams are upgraded connections).
type Nodes struct {
	base       *http.Transport // cloned per node; nil without credentials
	transports sync.Map        // node name → its Transport
	get        NodeGetter
	writeError ErrorWriter
}

// NewNodes reaches the nodes with tlsCfg (nil: the server has no
// credentials for node APIs, and every request to one fails with 503).
func NewNodes(tlsCfg *tls.Config, get NodeGetter, writeError ErrorWriter) *Nodes {
	n := &Nodes{get: get, writeError: writeError}
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
		tlsCfg.NextProtos = []string{"http/1.1"}
		n.base = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     tlsCfg,
			TLSHandshakeTimeout: DialTimeout,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	return n
}

// URL is path on the API of the node called name.
func (n *Nodes) URL(ctx context.Context, name, path string, query url.Values) (*url.URL, error) {
	node, err := n.get(ctx, name)
	if err != nil {
		return nil, err
	}
	return n.APIURL(node, path, query)
}

// APIURL is path on node's API, at its address (APIAddress) and the
// port it registered.
func (n *Nodes) APIURL(node *corev1.Node, path string, query url.Values) (*url.URL, error) {
	if n.base == nil {
		return nil, apierrors.NewServiceUnavailable("this API server has no credentials for node APIs")
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	host := APIAddress(node)
	if port == 0 || host == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q has no node API address", node.Name))
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port))), Path: path, RawQuery: query.Encode()}, nil
}

// APIAddress is the address the node's API is reached at: its internal
// IP, else its external IP, else its hostname.
func APIAddress(node *corev1.Node) string {
	for _, kind := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		if a := registry.NodeAddress(node, kind); a != "<none>" && a != "" {
			return a
		}
	}
	return ""
}

// Transport is the transport for every request to node's API: a failure
// to connect names the node, whichever proxy (pass-through, translating,
// tunneling) meets it. There is one per node, so that kept-alive
// connections are reused rather than left idle in a transport used once.
func (n *Nodes) Transport(node string) *http.Transport {
	if t, ok := n.transports.Load(node); ok {
		return t.(*http.Transport)
	}
	t := n.base.Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, &dialError{node: node, addr: addr, err: err}
		}
		return conn, nil
	}
	actual, _ := n.transports.LoadOrStore(node, t)
	return actual.(*http.Transport)
}

// Get GETs loc from node's API. An error answer of the node is a Status
// error carrying its message, as kube-apiserver makes it.
func (n *Nodes) Get(ctx context.Context, node string, loc *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.Transport(node).RoundTrip(req)
	if err != nil {
		return nil, Unreachable(node, loc, err)
	}
	if err := responseError(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// Stream GETs loc from node and copies the body to w, flushing after
// every read, or over a WebSocket when r asks for one.
func (n *Nodes) Stream(w http.ResponseWriter, r *http.Request, node string, loc *url.URL) error {
	resp, err := n.Get(r.Context(), node, loc)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if wsstream.IsWebSocketRequest(r) {
		// As kube-apiserver: the stream as WebSocket messages (binary.k8s.io
		// or base64.binary.k8s.io), pinged while it idles.
		return wsstream.NewReader(resp.Body, true, wsstream.NewDefaultReaderProtocols()).Copy(w, r)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return nil // the client went away
			}
			_ = rc.Flush()
		}
		if err != nil {
			return nil // the status line is sent; the stream just ends
		}
	}
}

// Upgrade proxies a request to loc on node's API, connection upgrades
// included (required, or allowed).
func (n *Nodes) Upgrade(node string, loc *url.URL, upgradeRequired bool) http.Handler {
	h := proxy.NewUpgradeAwareHandler(loc, n.Transport(node), false, upgradeRequired, responder(func(w http.ResponseWriter, err error) {
		n.writeError(w, Unreachable(node, loc, err))
	}))
	h.UseLocationHost = true
	return h
}

// Exec proxies exec or attach to loc on node: SPDY and WebSocket up to v4
// pass through; WebSocket v5 (kubectl's default) is translated to SPDY,
// as kube-apiserver does.
func (n *Nodes) Exec(w http.ResponseWriter, r *http.Request, node string, loc *url.URL, streams streamproxy.Options) {
	translator := streamproxy.NewStreamTranslatorHandler(loc, n.Transport(node), 0, streams)
	streamproxy.NewTranslatingHandler(n.Upgrade(node, loc, true), translator, wsstream.IsWebSocketRequestWithStreamCloseProtocol).ServeHTTP(w, r)
}

// PortForward proxies port-forward to loc on node: SPDY passes through,
// and kubectl's WebSocket tunnel is unwrapped to SPDY.
func (n *Nodes) PortForward(w http.ResponseWriter, r *http.Request, node string, loc *url.URL) {
	upgrade := n.Upgrade(node, loc, true)
	tunnel := streamproxy.NewTunnelingHandler(upgrade)
	streamproxy.NewTranslatingHandler(upgrade, tunnel, wsstream.IsWebSocketRequestWithTunnelingProtocol).ServeHTTP(w, r)
}

// dialError is a failure to connect to a node's API.
type dialError struct {
	node, addr string
	err        error
}

func (e *dialError) Error() string {
	return fmt.Sprintf("node %q cannot be reached at %s: %v", e.node, e.addr, e.err)
}

func (e *dialError) Unwrap() error { return e.err }

// Unreachable is the error for a node whose API did not answer.
func Unreachable(node string, loc *url.URL, err error) error {
	if dialErr, ok := errors.AsType[*dialError](err); ok {
		return apierrors.NewServiceUnavailable(dialErr.Error())
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("node %q cannot be reached at %s: %v", node, loc.Host, err))
}

// responseError turns a node API's error answer into a Status error
// carrying its message, as kube-apiserver does.
func responseError(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	msg := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(msg)
	case http.StatusNotFound: // e.g. the node does not have the pod (yet)
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
			Reason: metav1.StatusReasonNotFound, Message: msg}}
	}
	return apierrors.NewInternalError(errors.New(msg))
}
