package envvars

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiService is the API server's service in the default namespace: every
// pod gets its variables, even with service links disabled.
const apiService = "kubernetes"

// serviceVars are the service link variables of the pod, services sorted by
// name, each service's variables in the order serviceLinkVars gives.
func serviceVars(ctx context.Context, src Sources, pod *v1.Pod) ([]envVar, error) {
	services, err := linkedServices(ctx, src, pod)
	if err != nil {
		return nil, err
	}
	var out []envVar
	for _, s := range services {
		out = append(out, serviceLinkVars(s)...)
	}
	return out, nil
}

// linkedServices are the services whose variables the pod gets, as the
// kubelet chooses them: `kubernetes` of namespace default always, and, when
// pod.Spec.EnableServiceLinks is nil or true, every service of the pod's
// namespace (which wins over default's `kubernetes` for that name). Only
// services with a cluster IP (set and not None) count.
func linkedServices(ctx context.Context, src Sources, pod *v1.Pod) ([]*v1.Service, error) {
	defaults, err := src.Services(ctx, metav1.NamespaceDefault)
	if err != nil {
		return nil, fmt.Errorf("list services in %s: %w", metav1.NamespaceDefault, err)
	}
	byName := map[string]*v1.Service{}
	for _, s := range defaults {
		if s.Name == apiService && hasClusterIP(s) {
			byName[s.Name] = s
		}
	}
	if links := pod.Spec.EnableServiceLinks; links == nil || *links {
		own := defaults
		if pod.Namespace != metav1.NamespaceDefault {
			if own, err = src.Services(ctx, pod.Namespace); err != nil {
				return nil, fmt.Errorf("list services in %s: %w", pod.Namespace, err)
			}
		}
		for _, s := range own {
			if hasClusterIP(s) {
				byName[s.Name] = s
			}
		}
	}
	out := make([]*v1.Service, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *v1.Service) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// serviceLinkVars are one service's variables, for a service "my-db" with
// cluster IP 10.0.0.7 and a first port 5432/TCP named "pg":
//
//	MY_DB_SERVICE_HOST=10.0.0.7
//	MY_DB_SERVICE_PORT=5432          (first port)
//	MY_DB_SERVICE_PORT_PG=5432       (each named port)
//	MY_DB_PORT=tcp://10.0.0.7:5432   (first port, docker-link style)
//	MY_DB_PORT_5432_TCP=tcp://10.0.0.7:5432, then _PROTO=tcp, _PORT=5432,
//	_ADDR=10.0.0.7                   (each port)
//
// An IPv6 address is bracketed in the URLs. A service without ports gets
// only _SERVICE_HOST.
func serviceLinkVars(s *v1.Service) []envVar {
	prefix := envName(s.Name)
	ip := s.Spec.ClusterIP
	out := []envVar{{name: prefix + "_SERVICE_HOST", value: ip}}
	if len(s.Spec.Ports) == 0 {
		return out
	}
	out = append(out, envVar{name: prefix + "_SERVICE_PORT", value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, envVar{name: prefix + "_SERVICE_PORT_" + envName(p.Name), value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		port := strconv.Itoa(int(p.Port))
		url := proto + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, envVar{name: prefix + "_PORT", value: url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			envVar{name: pp, value: url},
			envVar{name: pp + "_PROTO", value: proto},
			envVar{name: pp + "_PORT", value: port},
			envVar{name: pp + "_ADDR", value: ip})
	}
	return out
}

// envName turns a service or port name into a variable name part.
func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
