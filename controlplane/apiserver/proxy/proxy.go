// Package proxy carries API requests on to what runs in the cluster, as
// kube-apiserver's proxies do: to the nodes' APIs (pods' logs, exec,
// attach, port-forward and nodes/proxy, with the server's client
// certificate) and to pods and services (pods/proxy, services/proxy). The
// handlers that decide where a request goes are package apiserver's; this
// is how it gets there and how a failure to get there reads.
package proxy

import (
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// DialTimeout bounds connecting to a node or a pod, so that a dead one is
// an error, not a hang.
const DialTimeout = 5 * time.Second

// ErrorWriter answers a request with err as a Status.
type ErrorWriter func(w http.ResponseWriter, err error)

// SplitName splits a proxy subresource's name, [scheme:]name[:port]; the
// scheme is http when not given.
func SplitName(id string) (scheme, name, port string, err error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return "", "", "", apierrors.NewBadRequest(fmt.Sprintf("invalid request %q", id))
	}
	if scheme == "" {
		scheme = "http"
	}
	return scheme, name, port, nil
}
