package proxy

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
	"k8s.io/apimachinery/pkg/util/proxy"
)

// Backends proxies to pods and services (pods/proxy, services/proxy, and
// nodes/proxy to a port other than the node API's).
type Backends struct {
	transport  *http.Transport
	writeError ErrorWriter
}

// NewBackends is the proxy to pods and services. Pods have no
// certificates the cluster issues, so an https backend's certificate is
// not checked, as kube-apiserver's proxy does not.
func NewBackends(writeError ErrorWriter) *Backends {
	return &Backends{writeError: writeError, transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // pods have no cluster-issued certificates
		TLSHandshakeTimeout: DialTimeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// To proxies the request to loc: any method, upgrades included; a GET or
// HEAD of the bare .../proxy is redirected to .../proxy/, and links in
// HTML answers are rewritten to stay under the proxy's path, as
// kube-apiserver does. A failure names what, the target.
func (b *Backends) To(w http.ResponseWriter, r *http.Request, loc *url.URL, what string) {
	h := proxy.NewUpgradeAwareHandler(loc, b.transport, true, false, responder(func(w http.ResponseWriter, err error) {
		b.writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: %v", what, err)))
	}))
	h.UseLocationHost = true
	h.ServeHTTP(w, r)
}

// responder answers a failed proxying.
type responder func(w http.ResponseWriter, err error)

func (f responder) Error(w http.ResponseWriter, _ *http.Request, err error) { f(w, err) }

// PodURL is path on the pod at port (a number), else at its first
// declared container port, else at the scheme's default.
func PodURL(pod *corev1.Pod, scheme, port, path string) (*url.URL, error) {
	if port == "" {
		port = firstContainerPort(pod)
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	host := ip.String()
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if ip.To4() == nil {
		host = "[" + host + "]"
	}
	return &url.URL{Scheme: scheme, Host: host, Path: path}, nil
}

func firstContainerPort(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return strconv.Itoa(int(c.Ports[0].ContainerPort))
		}
	}
	return ""
}

// ServicePortName is the name of svc's port number n.
func ServicePortName(svc *corev1.Service, n int) (string, error) {
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == n {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, svc.Name))
}

// PickEndpoint is host:port of a random ready address serving the port
// named portName.
func PickEndpoint(eps *corev1.Endpoints, portName string) (string, bool) {
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
