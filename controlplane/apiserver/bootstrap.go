package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-lab/skiff/controlplane/store"
)

// systemNamespaces exist in every cluster.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Bootstrap creates what every cluster has, idempotently: the system
// namespaces and the kubernetes Service with its Endpoints (the API server
// at advertiseIP:port). It also repairs the service allocations. Run it
// before serving.
func (s *Server) Bootstrap(ctx context.Context, advertiseIP string, port int) error {
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.createIfMissing(ctx, s.namespaces, ns); err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
	}
	if err := s.repairServices(ctx); err != nil {
		return fmt.Errorf("repair service allocations: %w", err)
	}
	services := s.resourceFor("services")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: services.strategy.(serviceStrategy).FirstIP(),
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(port)}},
		},
	}
	if err := s.createIfMissing(ctx, services, svc); err != nil {
		return fmt.Errorf("kubernetes service: %w", err)
	}
	return s.ensureAPIEndpoints(ctx, advertiseIP, port)
}

func (s *Server) resourceFor(plural string) *resource {
	for _, r := range s.resources {
		if r.plural == plural {
			return r
		}
	}
	panic("no resource " + plural)
}

// createIfMissing creates obj through the same path as an API create.
func (s *Server) createIfMissing(ctx context.Context, res *resource, obj runtime.Object) error {
	m := objectMeta(obj)
	if err := s.store.Get(ctx, res.key(m.Namespace, m.Name), res.newObj()); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	req := request{res: res, namespace: m.Namespace, name: m.Name, verb: "create"}
	if err := s.admitCreate(ctx, req, obj); err != nil {
		return err
	}
	err := s.persistNew(ctx, res, obj, false)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureAPIEndpoints points default/kubernetes at this API server.
func (s *Server) ensureAPIEndpoints(ctx context.Context, ip string, port int) error {
	res := s.resourceFor("endpoints")
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
	if err := s.createIfMissing(ctx, res, ep.DeepCopy()); err != nil {
		return err
	}
	into := &corev1.Endpoints{}
	return s.store.Update(ctx, res.key(ep.Namespace, ep.Name), into, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.Endpoints)
		c.Subsets = ep.Subsets
		return c, nil
	})
}

func (s *Server) repairServices(ctx context.Context) error {
	res := s.resourceFor("services")
	page, err := s.store.List(ctx, res.prefix(""), store.ListOptions{}, res.newObj)
	if err != nil {
		return err
	}
	services := make([]*corev1.Service, len(page.Items))
	for i, item := range page.Items {
		services[i] = item.(*corev1.Service)
	}
	return res.strategy.(serviceStrategy).Repair(ctx, services)
}

// FirstServiceIP is the kubernetes Service's ClusterIP.
func (s *Server) FirstServiceIP() string {
	return s.resourceFor("services").strategy.(serviceStrategy).FirstIP()
}
