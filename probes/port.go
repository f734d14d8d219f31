package probes

import (
	"errors"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ErrPortNotFound is wrapped by the error of a probe whose port names a port
// the container does not declare.
var ErrPortNotFound = errors.New("named port not found")

// resolvePort turns a probe's port into a number: a number is used as is, a
// name is looked up in the container's ports, and a name that is all digits
// is taken as a number (kubelet's last resort).
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	n := port.IntValue()
	if port.Type == intstr.String {
		var err error
		if n, err = namedPort(port.StrVal, c); err != nil {
			return 0, err
		}
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}

func namedPort(name string, c *v1.Container) (int, error) {
	if c != nil {
		for _, p := range c.Ports {
			if p.Name == name {
				return int(p.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	container := ""
	if c != nil {
		container = c.Name
	}
	return 0, fmt.Errorf("port %q of container %q: %w", name, container, ErrPortNotFound)
}
