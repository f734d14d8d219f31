package probes

import (
	"context"
	"net"
	"strconv"
	"time"
)

// tcpProbe opens a TCP connection to host:port and closes it. A connection
// made within timeout is Success; anything else is Failure with the dial error
// as output ("dial tcp 10.244.0.5:80: connect: connection refused").
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close() // the probe is over; a close error changes nothing
	return Success, "", nil
}
