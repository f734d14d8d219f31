package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// systemNamespaces exist in every cluster.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Bootstrap creates what every cluster has, idempotently: the system
// namespaces, the system priority classes, the default ServiceCIDR, the
// kubernetes Service with its Endpoints and EndpointSlice
// (the API server at advertiseIP:port), and the kube-dns Service at the
// cluster DNS address (answered by every node itself, so it has no
// selector and no endpoints). It also repairs the service allocations. Run
// it before serving.
func (s *Server) Bootstrap(ctx context.Context, advertiseIP string, port int) error {
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.createIfMissing(ctx, s.namespaces, ns); err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
	}
	for _, pc := range registry.SystemPriorityClasses() {
		if err := s.createIfMissing(ctx, s.resourceFor("priorityclasses"), pc); err != nil {
			return fmt.Errorf("priority class %s: %w", pc.Name, err)
		}
	}
	if err := s.ensureFlowControlConfig(ctx); err != nil {
		return err
	}
	if err := s.ensureServiceCIDR(ctx); err != nil {
		return err
	}
	leaks, err := s.repairServices(ctx)
	if err != nil {
		return fmt.Errorf("repair service allocations: %w", err)
	}
	go s.releaseLeaks(ctx, leaks)
	services := s.resourceFor("services")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: services.Strategy.(registry.ServiceStrategy).FirstIP(),
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(port)}},
		},
	}
	if err := s.createIfMissing(ctx, services, svc); err != nil {
		return fmt.Errorf("kubernetes service: %w", err)
	}
	if err := s.createIfMissing(ctx, services, dnsService(services.Strategy.(registry.ServiceStrategy).DNSIP())); err != nil {
		// Someone holds the address: DNS still works on the nodes; only
		// tools looking for the Service miss it.
		slog.Warn("kube-system/kube-dns service not created", "err", err)
	}
	return s.reconcileAPIEndpoints(ctx, advertiseIP, port)
}

// EnsureStorageClass makes sc if no class of its name exists (one deleted
// comes back at the next start, as k3s's local-path does).
func (s *Server) EnsureStorageClass(ctx context.Context, sc *storagev1.StorageClass) error {
	if err := s.createIfMissing(ctx, s.resourceFor("storageclasses"), sc); err != nil {
		return fmt.Errorf("storage class %s: %w", sc.Name, err)
	}
	return nil
}

// dnsService is kube-system/kube-dns, where pods and tools look for the
// cluster DNS, labelled as kubeadm's.
func dnsService(ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "KubeDNS"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(53)},
			},
		},
	}
}

func (s *Server) resourceFor(plural string) *registry.Resource {
	for _, r := range s.resources {
		if r.Plural == plural {
			return r
		}
	}
	panic("no resource " + plural)
}

// createIfMissing creates obj through the same path as an API create.
func (s *Server) createIfMissing(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	m := registry.ObjectMeta(obj)
	if err := s.store.Get(ctx, res.Key(m.Namespace, m.Name), res.NewObj()); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	req := request{res: res, namespace: m.Namespace, name: m.Name, verb: "create"}
	if err := s.admitCreate(ctx, req, obj); err != nil {
		return err
	}
	err := s.persistNew(ctx, res, obj, false, nil)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (s *Server) repairServices(ctx context.Context) (leaks map[string]string, err error) {
	res := s.resourceFor("services")
	page, err := s.store.List(ctx, res.Prefix(""), store.ListOptions{}, res.NewObj)
	if err != nil {
		return nil, err
	}
	services := make([]*corev1.Service, len(page.Items))
	for i, item := range page.Items {
		services[i] = item.(*corev1.Service)
	}
	return res.Strategy.(registry.ServiceStrategy).Repair(ctx, services)
}

// leakConfirmDelay is how long a service allocation must stay leaked
// before it is freed: longer than any create in flight on another server.
const leakConfirmDelay = time.Minute

// releaseLeaks frees the allocations of leaks that are still leaked
// leakConfirmDelay later.
func (s *Server) releaseLeaks(ctx context.Context, leaks map[string]string) {
	if len(leaks) == 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(leakConfirmDelay):
	}
	now, err := s.repairServices(ctx)
	if err == nil {
		err = s.resourceFor("services").Strategy.(registry.ServiceStrategy).ReleaseLeaks(ctx, leaks, now)
	}
	if err != nil && ctx.Err() == nil {
		slog.Warn("service allocations not repaired", "err", err)
	}
}

// FirstServiceIP is the kubernetes Service's ClusterIP.
func (s *Server) FirstServiceIP() string {
	return s.resourceFor("services").Strategy.(registry.ServiceStrategy).FirstIP()
}

// CreateSecret creates secret, as an API create would, unless one of its
// name exists.
func (s *Server) CreateSecret(ctx context.Context, secret *corev1.Secret) error {
	return s.createIfMissing(ctx, s.resourceFor("secrets"), secret)
}

// ensureServiceCIDR publishes the server's service range as the default
// ServiceCIDR, Ready as kube-apiserver's ServiceCIDR controller marks it.
func (s *Server) ensureServiceCIDR(ctx context.Context) error {
	res := s.resourceFor("servicecidrs")
	cidr := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: registry.DefaultServiceCIDRName},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{s.cfg.ServiceCIDR.String()}},
	}
	if err := s.createIfMissing(ctx, res, cidr); err != nil {
		return fmt.Errorf("default ServiceCIDR: %w", err)
	}
	into := &networkingv1.ServiceCIDR{}
	return s.store.Update(ctx, res.Key("", registry.DefaultServiceCIDRName), into, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*networkingv1.ServiceCIDR)
		for _, cond := range c.Status.Conditions {
			if cond.Type == networkingv1.ServiceCIDRConditionReady && cond.Status == metav1.ConditionTrue {
				return c, nil
			}
		}
		c.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
			Message:            "Kubernetes default Service CIDR is ready",
			LastTransitionTime: metav1.Now(), ObservedGeneration: c.Generation}}
		return c, nil
	})
}
