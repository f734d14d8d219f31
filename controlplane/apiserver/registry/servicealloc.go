package registry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	ipReservations   = "/registry/ranges/serviceips/"
	portReservations = "/registry/ranges/servicenodeports/"
)

// PortRange is an inclusive range of ports.
type PortRange struct{ Base, Max int }

// ParsePortRange parses "30000-32767".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("invalid port range %q: want BASE-MAX within 1-65535", s)
	}
	return PortRange{Base: a, Max: b}, nil
}

func (p PortRange) contains(port int32) bool { return int(port) >= p.Base && int(port) <= p.Max }

// String is the range as --service-node-port-range takes it.
func (p PortRange) String() string { return fmt.Sprintf("%d-%d", p.Base, p.Max) }

// ServiceAllocator hands out ClusterIPs and NodePorts, recording each as a
// reservation in the store so that none is given twice, across restarts
// and across API servers sharing one etcd.
type ServiceAllocator struct {
	store *store.Store
	base  uint32 // the network address of the service CIDR
	size  uint32 // addresses in the CIDR
	ports PortRange
}

// NewServiceAllocator allocates ClusterIPs of cidr and NodePorts of ports
// over the store st.
func NewServiceAllocator(st *store.Store, cidr *net.IPNet, ports PortRange) (*ServiceAllocator, error) {
	if cidr == nil || cidr.IP.To4() == nil {
		return nil, errors.New("service CIDR must be an IPv4 network")
	}
	ones, bits := cidr.Mask.Size()
	if bits-ones < 2 || bits-ones > 20 {
		return nil, fmt.Errorf("service CIDR %s must hold between 4 and 2^20 addresses", cidr)
	}
	return &ServiceAllocator{store: st, base: binary.BigEndian.Uint32(cidr.IP.To4()), size: 1 << (bits - ones), ports: ports}, nil
}

// FirstIP is the service CIDR's first usable address (the kubernetes
// service's ClusterIP).
func (a *ServiceAllocator) FirstIP() string { return a.ipAt(1) }

// DNSIP is the service CIDR's tenth address, the cluster DNS Service's
// ClusterIP, as kubeadm and k3s give it.
func (a *ServiceAllocator) DNSIP() string { return a.ipAt(10) }

func (a *ServiceAllocator) ipAt(offset uint32) string {
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, a.base+offset)
	return ip.String()
}

// offsetOf returns ip's offset in the range; ok is false outside it or on
// the network and broadcast addresses.
func (a *ServiceAllocator) offsetOf(ip string) (uint32, bool) {
	parsed := net.ParseIP(ip).To4()
	if parsed == nil {
		return 0, false
	}
	off := binary.BigEndian.Uint32(parsed) - a.base
	return off, off >= 1 && off < a.size-1
}

func owner(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// Allocate claims the ClusterIP and NodePorts svc needs beyond those old
// (the stored service on update, nil on create) already holds, filling in
// the ones left empty. undo gives them back.
func (a *ServiceAllocator) Allocate(ctx context.Context, obj, old runtime.Object) (func(), error) {
	svc := obj.(*corev1.Service)
	var held []string
	undo := func() {
		for _, key := range held {
			_ = a.store.Release(context.WithoutCancel(ctx), key, owner(svc))
		}
	}
	holds := map[string]bool{}
	if old != nil {
		for _, k := range a.keysOf(old.(*corev1.Service)) {
			holds[k] = true
		}
	}
	claim := func(key string) error {
		if holds[key] {
			return nil
		}
		if err := a.store.Reserve(ctx, key, owner(svc)); err != nil {
			return err
		}
		held = append(held, key)
		return nil
	}
	err := a.allocateIP(ctx, svc, claim)
	if err == nil {
		err = a.allocatePorts(ctx, svc, claim)
	}
	if err != nil {
		undo()
		return func() {}, err
	}
	return undo, nil
}

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func (a *ServiceAllocator) allocateIP(ctx context.Context, svc *corev1.Service, claim func(string) error) error {
	if !needsClusterIP(svc) {
		return nil
	}
	path := field.NewPath("spec", "clusterIPs").Index(0)
	if ip := svc.Spec.ClusterIP; ip != "" {
		if _, ok := a.offsetOf(ip); !ok {
			return invalidService(svc, field.Invalid(path, ip, "provided IP is not in the valid range. The range of valid IPs is "+a.rangeString()))
		}
		if err := claim(ipReservations + ip); errors.Is(err, store.ErrExists) {
			return invalidService(svc, field.Invalid(path, ip, "provided IP is already allocated"))
		} else if err != nil {
			return err
		}
		return nil
	}
	ip, err := a.pick(ctx, ipReservations, int(a.size-2), func(i int) string { return a.ipAt(uint32(i) + 1) }, claim)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
	}
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
	return nil
}

func (a *ServiceAllocator) allocatePorts(ctx context.Context, svc *corev1.Service, claim func(string) error) error {
	if !needsNodePorts(svc) {
		return nil
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if p.NodePort != 0 {
			if err := claim(portReservations + strconv.Itoa(int(p.NodePort))); errors.Is(err, store.ErrExists) {
				return invalidService(svc, field.Invalid(path, p.NodePort, "provided port is already allocated"))
			} else if err != nil {
				return err
			}
			continue
		}
		port, err := a.pick(ctx, portReservations, a.ports.Max-a.ports.Base+1, func(i int) string { return strconv.Itoa(a.ports.Base + i) }, claim)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
		}
		n, _ := strconv.Atoi(port)
		p.NodePort = int32(n)
	}
	return nil
}

// pick claims a free value among n candidates, starting at a random one.
func (a *ServiceAllocator) pick(ctx context.Context, prefix string, n int, value func(int) string, claim func(string) error) (string, error) {
	taken, err := a.store.Reservations(ctx, prefix)
	if err != nil {
		return "", err
	}
	start := rand.N(n)
	for i := 0; i < n; i++ {
		v := value((start + i) % n)
		if _, ok := taken[v]; ok {
			continue
		}
		err := claim(prefix + v)
		if errors.Is(err, store.ErrExists) {
			continue
		}
		return v, err
	}
	return "", errors.New("range is full")
}

// Release gives back what old holds and obj (nil when old was deleted)
// does not.
func (a *ServiceAllocator) Release(ctx context.Context, obj, old runtime.Object) {
	keep := map[string]bool{}
	if obj != nil {
		for _, k := range a.keysOf(obj.(*corev1.Service)) {
			keep[k] = true
		}
	}
	svc := old.(*corev1.Service)
	for _, k := range a.keysOf(svc) {
		if !keep[k] {
			if err := a.store.Release(context.WithoutCancel(ctx), k, owner(svc)); err != nil {
				slog.Error("release service allocation", "key", k, "err", err)
			}
		}
	}
}

// keysOf lists the reservation keys a stored service holds.
func (a *ServiceAllocator) keysOf(svc *corev1.Service) []string {
	var keys []string
	if needsClusterIP(svc) && svc.Spec.ClusterIP != "" {
		keys = append(keys, ipReservations+svc.Spec.ClusterIP)
	}
	if needsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				keys = append(keys, portReservations+strconv.Itoa(int(p.NodePort)))
			}
		}
	}
	return keys
}

func (a *ServiceAllocator) rangeString() string {
	return a.ipAt(0) + "/" + strconv.Itoa(32-bitsFor(a.size))
}

func bitsFor(size uint32) int {
	n := 0
	for size > 1 {
		size >>= 1
		n++
	}
	return n
}

func invalidService(svc *corev1.Service, err *field.Error) error {
	return Invalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, field.ErrorList{err})
}

// Repair re-reserves what a stored service holds but the store lost, and
// returns the reservations no service holds: left by a crash between
// reserving and writing, or made by a create still in flight on another
// API server. ReleaseLeaks frees those of them still leaked a while later.
func (a *ServiceAllocator) Repair(ctx context.Context, services []*corev1.Service) (leaks map[string]string, err error) {
	want := map[string]string{}
	for _, svc := range services {
		for _, k := range a.keysOf(svc) {
			want[k] = owner(svc)
		}
	}
	leaks = map[string]string{}
	for _, prefix := range []string{ipReservations, portReservations} {
		have, err := a.store.Reservations(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for k, o := range have {
			if want[prefix+k] != o {
				leaks[prefix+k] = o
			}
		}
	}
	for k, o := range want {
		if err := a.store.Reserve(ctx, k, o); err != nil && !errors.Is(err, store.ErrExists) {
			return nil, err
		}
	}
	return leaks, nil
}

// ReleaseLeaks frees the reservations that were leaked by two Repairs, a while
// apart (the owner the same both times).
func (a *ServiceAllocator) ReleaseLeaks(ctx context.Context, before, now map[string]string) error {
	for k, o := range now {
		if before[k] != o {
			continue
		}
		if err := a.store.Release(ctx, k, o); err != nil {
			return err
		}
		slog.Info("released leaked service allocation", "key", k, "owner", o)
	}
	return nil
}
