package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/skiff-lab/skiff/agent/nodeapi"
	"github.com/skiff-lab/skiff/agent/stats"
	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// nodeAPIPort is the port the node API is served on: none without a port
// or a certificate (then the node registers no API port, and the API
// server says so when asked for logs).
func nodeAPIPort(cfg Config) int {
	if cfg.Port > 0 && cfg.TLSCertFile == "" && cfg.ServingCert == nil {
		slog.Warn("node API not served: no serving certificate (--tls-cert-file, --tls-private-key-file)")
		return 0
	}
	return cfg.Port
}

// serveNodeAPI starts the node API in the background if it has a port; it
// fails at once if its certificates cannot be had.
func (a *Agent) serveNodeAPI(ctx context.Context, collector *stats.Collector) error {
	if a.cfg.Port == 0 {
		return nil
	}
	tlsCfg, err := a.nodeAPITLS()
	if err != nil {
		return fmt.Errorf("node API: %w", err)
	}
	cfg := nodeapi.Config{
		Addr: net.JoinHostPort("", strconv.Itoa(a.cfg.Port)), TLS: tlsCfg,
		Clients: []string{a.cfg.APIServerClient}, Metrics: skiffmetrics.Handler(), Services: a.serviceViews(),
	}
	go func() {
		if err := nodeapi.Serve(ctx, cfg, nodeHost{a: a, stats: collector}); err != nil {
			slog.Error("node API stopped", "err", err)
		}
	}()
	return nil
}

// nodeAPITLS is the node API's serving certificate and the CA its clients'
// certificates must chain to (ClientCA, or the cluster CA from the REST
// config).
func (a *Agent) nodeAPITLS() (*tls.Config, error) {
	current, err := a.servingCert()
	if err != nil {
		return nil, err
	}
	caPEM := a.cfg.ClientCA
	if len(caPEM) == 0 {
		caPEM = a.cfg.REST.TLSClientConfig.CAData
	}
	if len(caPEM) == 0 && a.cfg.REST.TLSClientConfig.CAFile != "" {
		if caPEM, err = os.ReadFile(a.cfg.REST.TLSClientConfig.CAFile); err != nil {
			return nil, fmt.Errorf("cluster CA: %w", err)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the kubeconfig names no cluster CA to check clients against")
	}
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current(), nil }
	return &tls.Config{GetCertificate: getCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// servingCert gives the node API's current serving certificate: the one in
// TLSCertFile, or ServingCert's for the node's name and address.
func (a *Agent) servingCert() (func() *tls.Certificate, error) {
	if a.cfg.ServingCert != nil && a.cfg.TLSCertFile == "" {
		return a.cfg.ServingCert([]string{a.cfg.NodeName, a.nodeIP})
	}
	pair, err := tls.LoadX509KeyPair(a.cfg.TLSCertFile, a.cfg.TLSKeyFile)
	return func() *tls.Certificate { return &pair }, err
}
