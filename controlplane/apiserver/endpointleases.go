package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The lease endpoint reconciler, as kube-apiserver's: every API server
// keeps a record of its address in etcd under a lease it renews, and
// points the kubernetes Endpoints and EndpointSlice at every address with
// a live record; a server that dies drops out when its lease expires, one
// that stops removes its record first.
const (
	masterLeasePrefix = "/registry/masterleases/"
	// masterLeaseTTL and endpointReconcileInterval are kube-apiserver's
	// defaults.
	masterLeaseTTL            = 15 // seconds
	endpointReconcileInterval = 10 * time.Second
)

// reconcileAPIEndpoints renews this server's record (ip:port) and points
// default/kubernetes at every server that has one.
func (s *Server) reconcileAPIEndpoints(ctx context.Context, ip string, port int) error {
	c := s.store.Client()
	lease, err := c.Grant(ctx, masterLeaseTTL)
	if err != nil {
		return fmt.Errorf("api server lease: %w", err)
	}
	if _, err := c.Put(ctx, masterLeasePrefix+ip, strconv.Itoa(port), clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("api server lease: %w", err)
	}
	return s.pointAPIEndpoints(ctx, port)
}

// pointAPIEndpoints points default/kubernetes at the servers with live
// records, on port.
func (s *Server) pointAPIEndpoints(ctx context.Context, port int) error {
	resp, err := s.store.Client().Get(ctx, masterLeasePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("api server leases: %w", err)
	}
	var ips []string
	for _, kv := range resp.Kvs {
		if ip := strings.TrimPrefix(string(kv.Key), masterLeasePrefix); net.ParseIP(ip) != nil {
			ips = append(ips, ip)
		}
	}
	slices.Sort(ips)
	if err := s.ensureAPIEndpoints(ctx, ips, port); err != nil {
		return err
	}
	return s.ensureAPIEndpointSlice(ctx, ips, port)
}

// RunEndpointReconciler reconciles the kubernetes endpoints every
// interval until ctx ends, backing off while it fails; then it removes
// this server's record and address. The channel closes when it is done.
func (s *Server) RunEndpointReconciler(ctx context.Context, ip string, port int) <-chan struct{} {
	done := make(chan struct{})
	go s.followJourneyPeers(ctx, ip)
	go func() {
		defer close(done)
		backoff := reconcileBackoff()
		next := endpointReconcileInterval
		for {
			select {
			case <-ctx.Done():
				s.removeAPIEndpoint(ip, port)
				return
			case <-time.After(next):
			}
			next = endpointReconcileInterval
			if err := s.reconcileAPIEndpoints(ctx, ip, port); err != nil && ctx.Err() == nil {
				next = backoff.Step()
				slog.Warn("kubernetes endpoints not reconciled", "err", err, "retry", next)
				continue
			}
			backoff = reconcileBackoff()
		}
	}()
	return done
}

func reconcileBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Cap: endpointReconcileInterval, Steps: math.MaxInt32}
}

// removeAPIEndpoint drops this server's record and address, as a server
// that stops does.
func (s *Server) removeAPIEndpoint(ip string, port int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.store.Client().Delete(ctx, masterLeasePrefix+ip)
	if err == nil {
		err = s.pointAPIEndpoints(ctx, port)
	}
	if err != nil {
		slog.Warn("this API server's address not removed from the kubernetes endpoints", "err", err)
	}
}

// ensureAPIEndpoints points default/kubernetes at ips.
func (s *Server) ensureAPIEndpoints(ctx context.Context, ips []string, port int) error {
	res := s.resourceFor("endpoints")
	subsets := []corev1.EndpointSubset{}
	if len(ips) > 0 {
		subset := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}}}
		for _, ip := range ips {
			subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: ip})
		}
		subsets = append(subsets, subset)
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets: subsets,
	}
	if err := s.createIfMissing(ctx, res, ep.DeepCopy()); err != nil {
		return err
	}
	into := &corev1.Endpoints{}
	return s.store.Update(ctx, res.Key(ep.Namespace, ep.Name), into, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.Endpoints)
		if apiequality.Semantic.DeepEqual(c.Subsets, ep.Subsets) {
			return c, nil
		}
		c.Subsets = ep.Subsets
		return c, nil
	})
}

// ensureAPIEndpointSlice keeps the EndpointSlice of default/kubernetes
// pointing at ips: proxies route the service from slices.
func (s *Server) ensureAPIEndpointSlice(ctx context.Context, ips []string, port int) error {
	res := s.resourceFor("endpointslices")
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{{Name: new("https"), Port: new(int32(port)), Protocol: new(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}})
	}
	if err := s.createIfMissing(ctx, res, slice.DeepCopy()); err != nil {
		return err
	}
	into := &discoveryv1.EndpointSlice{}
	return s.store.Update(ctx, res.Key(slice.Namespace, slice.Name), into, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*discoveryv1.EndpointSlice)
		if apiequality.Semantic.DeepEqual(c.Endpoints, slice.Endpoints) && apiequality.Semantic.DeepEqual(c.Ports, slice.Ports) {
			return c, nil
		}
		c.Endpoints, c.Ports = slice.Endpoints, slice.Ports
		c.Generation++
		return c, nil
	})
}
