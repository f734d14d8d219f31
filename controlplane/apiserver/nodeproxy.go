package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/proxy"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
)

// The subresources that package proxy carries on: to the nodes' APIs
// (pods/log, exec, attach, portforward, nodes/proxy) and to pods and
// services (pods/proxy, services/proxy).

// nodeSubresource is the handler of a subresource served by a node's API
// or proxied to pods, or nil.
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

// getNode reads the Node called name; it is the node proxy's NodeGetter.
func (s *Server) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := s.store.Get(ctx, s.coreResource("nodes").Key("", name), node); err != nil {
		return nil, codec.StoreError(err, corev1.Resource("nodes"), name)
	}
	return node, nil
}

func (s *Server) pod(ctx context.Context, req request) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := s.store.Get(ctx, req.res.Key(req.namespace, req.name), pod); err != nil {
		return nil, codec.StoreError(err, req.res.GroupResource(), req.name)
	}
	return pod, nil
}

// podLog streams a container's log from the pod's node, flushing as it
// arrives, as text/plain.
func (s *Server) podLog(w http.ResponseWriter, r *http.Request, req request) error {
	if r.Method != http.MethodGet {
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), r.Method)
	}
	opts, err := proxy.ParseLogOptions(r.URL.Query())
	if err != nil {
		return err
	}
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	container, err := proxy.PodContainer(pod, opts.Get("container"))
	if err != nil {
		return err
	}
	opts.Del("container")
	if pod.Spec.NodeName == "" {
		w.Header().Set("Content-Type", "text/plain")
		return nil // nothing has run, so there is no log (as kube-apiserver)
	}
	loc, err := s.nodes.URL(r.Context(), pod.Spec.NodeName, "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/"+container, opts)
	if err != nil {
		return err
	}
	return s.nodes.Stream(w, r, pod.Spec.NodeName, loc)
}

// podStream proxies pods/exec and pods/attach to the node, once admitted.
func (s *Server) podStream(w http.ResponseWriter, r *http.Request, req request) error {
	q := r.URL.Query()
	if err := s.admitConnect(r.Context(), req, q); err != nil {
		return err
	}
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	container, err := proxy.PodContainer(pod, q.Get("container"))
	if err != nil {
		return err
	}
	streams := streamproxy.Options{Stdin: isTrue(q.Get("stdin")), Stdout: isTrue(q.Get("stdout")),
		Stderr: isTrue(q.Get("stderr")), Tty: isTrue(q.Get("tty"))}
	params, err := proxy.StreamParams(req.subresource, q, streams)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	path := "/" + req.subresource + "/" + pod.Namespace + "/" + pod.Name + "/" + container
	loc, err := s.nodes.URL(r.Context(), pod.Spec.NodeName, path, params)
	if err != nil {
		return err
	}
	s.nodes.Exec(w, r, pod.Spec.NodeName, loc, streams)
	return nil
}

// podPortForward proxies pods/portforward to the node, once admitted.
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
	loc, err := s.nodes.URL(r.Context(), pod.Spec.NodeName, "/portForward/"+pod.Namespace+"/"+pod.Name, params)
	if err != nil {
		return err
	}
	s.nodes.PortForward(w, r, pod.Spec.NodeName, loc)
	return nil
}

// nodeProxy proxies nodes/<[scheme:]name[:port]>/proxy<path> to the
// node's API (no port, or the API's), else to that port of the node's
// address.
func (s *Server) nodeProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := proxy.SplitName(req.name)
	if err != nil {
		return err
	}
	node, err := s.getNode(r.Context(), name)
	if err != nil {
		return err
	}
	if port != "" && port != strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)) {
		s.backends.To(w, r, &url.URL{Scheme: scheme, Host: net.JoinHostPort(proxy.APIAddress(node), port), Path: req.proxyPath}, "node "+name)
		return nil
	}
	loc, err := s.nodes.APIURL(node, req.proxyPath, r.URL.Query())
	if err != nil {
		return err
	}
	s.nodes.Upgrade(name, loc, false).ServeHTTP(w, r)
	return nil
}

// podProxy proxies pods/<[scheme:]name[:port]>/proxy<path> to the pod's
// IP (proxy.PodURL).
func (s *Server) podProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := proxy.SplitName(req.name)
	if err != nil {
		return err
	}
	req.name = name
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	loc, err := proxy.PodURL(pod, scheme, port, req.proxyPath)
	if err != nil {
		return err
	}
	s.backends.To(w, r, loc, "pod "+name)
	return nil
}

// serviceProxy proxies services/<[scheme:]name[:port]>/proxy<path> to one
// ready endpoint of the service's port (by name or number; the unnamed
// port when none is given), chosen at random.
func (s *Server) serviceProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := proxy.SplitName(req.name)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if n, err := strconv.Atoi(port); err == nil {
		svc := &corev1.Service{}
		if err := s.store.Get(ctx, req.res.Key(req.namespace, name), svc); err != nil {
			return codec.StoreError(err, req.res.GroupResource(), name)
		}
		if port, err = proxy.ServicePortName(svc, n); err != nil {
			return err
		}
	}
	eps := &corev1.Endpoints{}
	if err := s.store.Get(ctx, s.coreResource("endpoints").Key(req.namespace, name), eps); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
		}
		return codec.StoreError(err, corev1.Resource("endpoints"), name)
	}
	host, ok := proxy.PickEndpoint(eps, port)
	if !ok {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", req.name))
	}
	s.backends.To(w, r, &url.URL{Scheme: scheme, Host: host, Path: req.proxyPath}, "service "+name)
	return nil
}
