package controlplane

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPipeListenerServesHTTP: an HTTP server on the listener answers many
// concurrent keep-alive clients with no request cancelled, and a closed
// listener refuses new connections.
func TestPipeListenerServesHTTP(t *testing.T) {
	l := newPipeListener()
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Context().Err() != nil {
			http.Error(w, "cancelled", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return l.DialContext(ctx) },
	}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for range 50 {
				resp, err := client.Post("http://loopback/", "text/plain", strings.NewReader(strings.Repeat("x", 64<<10)))
				if err != nil {
					errs <- err
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n != 64<<10 {
					errs <- errors.New(resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	_ = l.Close()
	if _, err := l.DialContext(context.Background()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("dial after close: %v, want net.ErrClosed", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after close: %v, want net.ErrClosed", err)
	}
}
