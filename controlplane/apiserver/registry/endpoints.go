package registry

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EndpointsStrategy is core/v1 Endpoints.
type EndpointsStrategy struct{ BaseStrategy }

func (EndpointsStrategy) Validate(obj runtime.Object) field.ErrorList {
	ep := obj.(*corev1.Endpoints)
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		path := field.NewPath("subsets").Index(i)
		for j, a := range append(append([]corev1.EndpointAddress{}, ss.Addresses...), ss.NotReadyAddresses...) {
			if net.ParseIP(a.IP) == nil {
				errs = append(errs, field.Invalid(path.Child("addresses").Index(j).Child("ip"), a.IP, "must be a valid IP address"))
			}
		}
		for j, p := range ss.Ports {
			errs = append(errs, validatePortNumber(p.Port, path.Child("ports").Index(j).Child("port"))...)
		}
	}
	return errs
}

// PrepareForCreate gives every port the TCP protocol when it names none.
func (EndpointsStrategy) PrepareForCreate(obj runtime.Object) {
	ep := obj.(*corev1.Endpoints)
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func (e EndpointsStrategy) PrepareForUpdate(obj, _ runtime.Object) { e.PrepareForCreate(obj) }

func (EndpointsStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Endpoints", "string", "Endpoints of the service."), ageColumn}
}

func (EndpointsStrategy) Row(obj runtime.Object) []any {
	ep := obj.(*corev1.Endpoints)
	return []any{ep.Name, formatEndpoints(ep), age(ep.CreationTimestamp)}
}

// formatEndpoints lists the first three ready endpoints and counts the rest.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	add := func(s string) {
		if count < 3 {
			list = append(list, s)
		}
		count++
	}
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			if len(ss.Ports) == 0 {
				add(a.IP)
			}
			for _, p := range ss.Ports {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if count > 3 {
		out += fmt.Sprintf(" + %d more...", count-3)
	}
	return orNone(out)
}
