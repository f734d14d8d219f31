package probes

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeDialer returns a dialer whose sockets linger one second on close, so
// that frequent probes reset their connections instead of leaving sockets in
// TIME_WAIT on the node (the kubelet does the same).
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 1})
		})
		if err != nil {
			return err
		}
		return serr
	}}
}
