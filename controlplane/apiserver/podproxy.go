package apiserver

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// newProxyTransport is how the API server reaches pods and services for
// pods/proxy and services/proxy (and nodes/proxy to a port other than the
// node API's). Pods have no certificates the cluster issues, so an https
// backend's certificate is not checked, as kube-apiserver's proxy does not.
func newProxyTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: nodeDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     insecureBackendTLS(),
		TLSHandshakeTimeout: nodeDialTimeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
}

// insecureBackendTLS is the TLS of the proxy to pods and services: no
// certificate check (see newProxyTransport).
func insecureBackendTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // pods have no cluster-issued certificates
}

// splitProxyName splits a proxy subresource's name, [scheme:]name[:port].
func splitProxyName(id string) (scheme, name, port string, err error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return "", "", "", apierrors.NewBadRequest(fmt.Sprintf("invalid request %q", id))
	}
	if scheme == "" {
		scheme = "http"
	}
	return scheme, name, port, nil
}

// podProxy proxies pods/<[scheme:]name[:port]>/proxy<path> to the pod's
// IP: at port (a number), else the first declared container port, else
// the scheme's default.
func (s *Server) podProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := splitProxyName(req.name)
	if err != nil {
		return err
	}
	req.name = name
	pod, err := s.pod(r.Context(), req)
	if err != nil {
		return err
	}
	if port == "" {
		port = firstContainerPort(pod)
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return apierrors.NewBadRequest("address not allowed")
	}
	host := ip.String()
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if ip.To4() == nil {
		host = "[" + host + "]"
	}
	s.proxyTo(w, r, &url.URL{Scheme: scheme, Host: host, Path: req.proxyPath}, "pod "+name)
	return nil
}

func firstContainerPort(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return strconv.Itoa(int(c.Ports[0].ContainerPort))
		}
	}
	return ""
}

// serviceProxy proxies services/<[scheme:]name[:port]>/proxy<path> to one
// ready endpoint of the service's port (by name or number; the unnamed
// port when none is given), chosen at random.
func (s *Server) serviceProxy(w http.ResponseWriter, r *http.Request, req request) error {
	scheme, name, port, err := splitProxyName(req.name)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if n, err := strconv.Atoi(port); err == nil {
		svc := &corev1.Service{}
		if err := s.store.Get(ctx, req.res.Key(req.namespace, name), svc); err != nil {
			return storeError(err, req.res.GroupResource(), name)
		}
		if port, err = servicePortName(svc, n); err != nil {
			return err
		}
	}
	eps := &corev1.Endpoints{}
	if err := s.store.Get(ctx, s.coreResource("endpoints").Key(req.namespace, name), eps); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
		}
		return storeError(err, corev1.Resource("endpoints"), name)
	}
	host, ok := pickEndpoint(eps, port)
	if !ok {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", req.name))
	}
	s.proxyTo(w, r, &url.URL{Scheme: scheme, Host: host, Path: req.proxyPath}, "service "+name)
	return nil
}

// servicePortName is the name of svc's port number n.
func servicePortName(svc *corev1.Service, n int) (string, error) {
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == n {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, svc.Name))
}

// pickEndpoint is host:port of a random ready address serving the port
// named portName.
func pickEndpoint(eps *corev1.Endpoints, portName string) (string, bool) {
	var hosts []string
	for _, ss := range eps.Subsets {
		for _, p := range ss.Ports {
			if p.Name != portName {
				continue
			}
			for _, a := range ss.Addresses {
				hosts = append(hosts, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	if len(hosts) == 0 {
		return "", false
	}
	return hosts[rand.IntN(len(hosts))], true
}

// proxyTo proxies the request to loc: any method, upgrades included; a
// GET or HEAD of the bare .../proxy is redirected to .../proxy/, and
// links in HTML answers are rewritten to stay under the proxy's path,
// as kube-apiserver does.
func (s *Server) proxyTo(w http.ResponseWriter, r *http.Request, loc *url.URL, what string) {
	h := proxy.NewUpgradeAwareHandler(loc, s.proxyTransport, true, false, proxyResponder{what: what})
	h.UseLocationHost = true
	h.ServeHTTP(w, r)
}

// proxyResponder answers a failed proxying with a Status naming the target.
type proxyResponder struct{ what string }

func (p proxyResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: %v", p.what, err)))
}
