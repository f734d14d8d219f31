package controlplane

import (
	"context"
	"net"
	"sync"
)

// pipeListener is a net.Listener whose connections are net.Pipe pairs:
// in memory, synchronous and without buffers of their own (the HTTP
// server and client buffer), with the standard library's deadlines. It
// replaces grpc's bufconn, whose read deadline can fire after it was
// cleared: under load a timer stopped too late marked live connections
// timed out, and the HTTP server cancelled requests in flight.
type pipeListener struct {
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for a DialContext and returns its server end.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and DialContext; connections already made stay open.
func (l *pipeListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext returns the client end of a new connection once Accept has
// taken the server end.
func (l *pipeListener) DialContext(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		err := ctx.Err()
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: err}
	case <-l.done:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: net.ErrClosed}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "loopback" }
