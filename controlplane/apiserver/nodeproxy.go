package apiserver

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

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// nodeDialTimeout bounds connecting to a node's API, so that a dead node
// is an error, not a hang.
const nodeDialTimeout = 5 * time.Second

// newNodeTransport is how the API server reaches nodes' APIs: with its
// client certificate, checking the nodes' serving certificates against
// the cluster CA, over HTTP/1.1 (streams are upgraded connections).
func newNodeTransport(cfg *tls.Config) *http.Transport {
	if cfg == nil {
		return nil
	}
	tlsCfg := cfg.Clone()
	tlsCfg.NextProtos = []string{"http/1.1"}
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: nodeDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: nodeDialTimeout,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
	}
}

// nodeSubresource is the handler of a subresource served by a node's API
// (pods/log, exec, attach, portforward and nodes/proxy) or proxied to pods
// (pods/proxy, services/proxy), or nil.
func (s *Server) nodeSubresource(req request) func(http.ResponseWriter, *http.Request, request) error {
	switch {
	case req.res.Plural == "pods" && req.subresource == "log":
		return s.podLog
	case req.res.Plural == "pods" && (req.subresource == "exec" || req.subresource == "attach"):
		return s.podStream
	case req.res.Plural == "pods" && req.subresource == "portforward":
		return s.podPortForward
	case req.res.Plural == "pods" && req.subresource == "proxy":
		return s.podProxy
	case req.res.Plural == "services" && req.subresource == "proxy":
		return s.serviceProxy
	case req.res.Plural == "nodes" && req.subresource == "proxy":
		return s.nodeProxy
	}
	return nil
}

// podLog streams a container's log from the pod's node, flushing as it
// arrives, as text/plain.
func (s *Server) podLog(w http.ResponseWriter, r *http.Request, req request) error {
	if r.Method != http.MethodGet {
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), r.Method)
	}
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		return err
	}
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	container, err := podContainer(pod, opts.Get("container"))
	if err != nil {
		return err
	}
	opts.Del("container")
	if pod.Spec.NodeName == "" {
		w.Header().Set("Content-Type", "text/plain")
		return nil // nothing has run, so there is no log (as kube-apiserver)
	}
	loc, err := s.nodeURL(r.Context(), pod.Spec.NodeName, "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/"+container, opts)
	if err != nil {
		return err
	}
	return s.streamFromNode(w, r, pod.Spec.NodeName, loc)
}

// streamFromNode GETs loc from the node and copies the body to w, flushing
// after every read, or over a WebSocket when r asks for one. The node's
// error answers become Status errors.
func (s *Server) streamFromNode(w http.ResponseWriter, r *http.Request, node string, loc *url.URL) error {
	nreq, err := http.NewRequestWithContext(r.Context(), http.MethodGet, loc.String(), nil)
	if err != nil {
		return err
	}
	resp, err := s.transportTo(node).RoundTrip(nreq)
	if err != nil {
		return unreachable(node, loc, err)
	}
	defer resp.Body.Close()
	if err := nodeResponseError(resp); err != nil {
		return err
	}
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
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = rc.Flush()
		}
		if err != nil {
			return nil // the status line is sent; the stream just ends
		}
	}
}

// nodeResponseError turns a node API's error answer into a Status error
// carrying its message, as kube-apiserver does.
func nodeResponseError(resp *http.Response) error {
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

// podStream proxies pods/exec and pods/attach to the node: SPDY and
// WebSocket up to v4 pass through; WebSocket v5 (kubectl's default) is
// translated to SPDY, as kube-apiserver does.
func (s *Server) podStream(w http.ResponseWriter, r *http.Request, req request) error {
	q := r.URL.Query()
	if err := s.admitConnect(r.Context(), req, q); err != nil {
		return err
	}
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	container, err := podContainer(pod, q.Get("container"))
	if err != nil {
		return err
	}
	streams := streamproxy.Options{Stdin: isTrue(q.Get("stdin")), Stdout: isTrue(q.Get("stdout")),
		Stderr: isTrue(q.Get("stderr")), Tty: isTrue(q.Get("tty"))}
	params, err := streamParams(req.subresource, q, streams)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	path := "/" + req.subresource + "/" + pod.Namespace + "/" + pod.Name + "/" + container
	loc, err := s.nodeURL(r.Context(), pod.Spec.NodeName, path, params)
	if err != nil {
		return err
	}
	transport := s.transportTo(pod.Spec.NodeName)
	upgrade := s.upgradeHandler(pod.Spec.NodeName, transport, loc, true)
	translator := streamproxy.NewStreamTranslatorHandler(loc, transport, 0, streams)
	streamproxy.NewTranslatingHandler(upgrade, translator, wsstream.IsWebSocketRequestWithStreamCloseProtocol).ServeHTTP(w, r)
	return nil
}

// streamParams are the node API's query for exec or attach: its names for
// the streams, and the command.
func streamParams(subresource string, q url.Values, opts streamproxy.Options) (url.Values, error) {
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	params := url.Values{}
	for name, on := range map[string]bool{"input": opts.Stdin, "output": opts.Stdout, "error": opts.Stderr, "tty": opts.Tty} {
		if on {
			params.Set(name, "1")
		}
	}
	if subresource == "exec" {
		if len(q["command"]) == 0 {
			return nil, apierrors.NewBadRequest("you must specify at least one command for the container")
		}
		params["command"] = q["command"]
	}
	return params, nil
}

// podPortForward proxies pods/portforward to the node: SPDY passes
// through, and kubectl's WebSocket tunnel is unwrapped to SPDY.
func (s *Server) podPortForward(w http.ResponseWriter, r *http.Request, req request) error {
	if err := s.admitConnect(r.Context(), req, r.URL.Query()); err != nil {
		return err
	}
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	params := url.Values{}
	if ports := r.URL.Query()["ports"]; len(ports) > 0 {
		params["port"] = ports
	}
	loc, err := s.nodeURL(r.Context(), pod.Spec.NodeName, "/portForward/"+pod.Namespace+"/"+pod.Name, params)
	if err != nil {
		return err
	}
	upgrade := s.upgradeHandler(pod.Spec.NodeName, s.transportTo(pod.Spec.NodeName), loc, true)
	tunnel := streamproxy.NewTunnelingHandler(upgrade)
	streamproxy.NewTranslatingHandler(upgrade, tunnel, wsstream.IsWebSocketRequestWithTunnelingProtocol).ServeHTTP(w, r)
	return nil
}

// nodeProxy proxies nodes/<[scheme:]name[:port]>/proxy<path> to the
// node's API (no port, or the API's), else to that port of the node's
// address.
func (s *Server) nodeProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := splitProxyName(req.name)
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := s.store.Get(r.Context(), s.coreResource("nodes").Key("", name), node); err != nil {
		return storeError(err, corev1.Resource("nodes"), name)
	}
	if port != "" && port != strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)) {
		s.proxyTo(w, r, &url.URL{Scheme: scheme, Host: net.JoinHostPort(apiAddress(node), port), Path: req.proxyPath}, "node "+name)
		return nil
	}
	loc, err := s.nodeAPIURL(node, req.proxyPath, r.URL.Query())
	if err != nil {
		return err
	}
	s.upgradeHandler(name, s.transportTo(name), loc, false).ServeHTTP(w, r)
	return nil
}

func (s *Server) upgradeHandler(node string, transport *http.Transport, loc *url.URL, upgradeRequired bool) http.Handler {
	h := proxy.NewUpgradeAwareHandler(loc, transport, false, upgradeRequired, nodeResponder{node: node, loc: loc})
	h.UseLocationHost = true
	return h
}

// transportTo is the transport for every request to node's API: a failure
// to connect names the node, whichever proxy (pass-through, translating,
// tunneling) meets it. There is one per node, so that kept-alive
// connections are reused rather than left idle in a transport used once.
func (s *Server) transportTo(node string) *http.Transport {
	if t, ok := s.nodeTransports.Load(node); ok {
		return t.(*http.Transport)
	}
	t := s.nodeTransport.Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, &nodeDialError{node: node, addr: addr, err: err}
		}
		return conn, nil
	}
	actual, _ := s.nodeTransports.LoadOrStore(node, t)
	return actual.(*http.Transport)
}

// nodeDialError is a failure to connect to a node's API.
type nodeDialError struct {
	node, addr string
	err        error
}

func (e *nodeDialError) Error() string {
	return fmt.Sprintf("node %q cannot be reached at %s: %v", e.node, e.addr, e.err)
}

func (e *nodeDialError) Unwrap() error { return e.err }

// nodeResponder answers a failed proxying with a Status naming the node.
type nodeResponder struct {
	node string
	loc  *url.URL
}

func (n nodeResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeError(w, unreachable(n.node, n.loc, err))
}

// unreachable is the error for a node whose API did not answer.
func unreachable(node string, loc *url.URL, err error) error {
	if dialErr, ok := errors.AsType[*nodeDialError](err); ok {
		return apierrors.NewServiceUnavailable(dialErr.Error())
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("node %q cannot be reached at %s: %v", node, loc.Host, err))
}

// nodeURL is path on the API of the node called name.
func (s *Server) nodeURL(ctx context.Context, name, path string, query url.Values) (*url.URL, error) {
	node := &corev1.Node{}
	if err := s.store.Get(ctx, s.coreResource("nodes").Key("", name), node); err != nil {
		return nil, storeError(err, corev1.Resource("nodes"), name)
	}
	return s.nodeAPIURL(node, path, query)
}

// nodeAPIURL is path on node's API, at its internal address and the port
// it registered.
func (s *Server) nodeAPIURL(node *corev1.Node, path string, query url.Values) (*url.URL, error) {
	if s.nodeTransport == nil {
		return nil, apierrors.NewServiceUnavailable("this API server has no credentials for node APIs")
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	host := apiAddress(node)
	if port == 0 || host == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q has no node API address", node.Name))
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, fmt.Sprint(port)), Path: path, RawQuery: query.Encode()}, nil
}

// apiAddress is the address the node's API is reached at: its internal
// IP, else its external IP, else its hostname.
func apiAddress(node *corev1.Node) string {
	for _, kind := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		if a := registry.NodeAddress(node, kind); a != "<none>" && a != "" {
			return a
		}
	}
	return ""
}

func (s *Server) pod(ctx context.Context, req request) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := s.store.Get(ctx, req.res.Key(req.namespace, req.name), pod); err != nil {
		return nil, storeError(err, req.res.GroupResource(), req.name)
	}
	return pod, nil
}

// podContainer resolves the container a request names: the pod's only
// container when none is named.
func podContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
	}
	if registry.ContainerNamed(&pod.Spec, name) {
		return name, nil
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// logParams are PodLogOptions' query parameters the node API takes.
var logParams = []string{"container", "follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

// parseLogOptions checks a pods/log query as PodLogOptions' validation
// does and keeps the parameters the node takes.
func parseLogOptions(q url.Values) (url.Values, error) {
	out := url.Values{}
	for _, name := range logParams {
		if v := q.Get(name); v != "" {
			out.Set(name, v)
		}
	}
	var errs field.ErrorList
	for _, p := range []struct {
		name string
		min  int64
	}{{"tailLines", 0}, {"sinceSeconds", 1}, {"limitBytes", 1}} {
		if v := out.Get(p.name); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < p.min {
				errs = append(errs, field.Invalid(field.NewPath(p.name), v, fmt.Sprintf("must be an integer of at least %d", p.min)))
			}
		}
	}
	if v := out.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("sinceTime"), v, "must be an RFC 3339 time"))
		}
		if out.Get("sinceSeconds") != "" {
			errs = append(errs, field.Forbidden(field.NewPath("sinceSeconds"), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, "", errs)
	}
	return out, nil
}
