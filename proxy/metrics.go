package proxy

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The proxy's metrics carry kube-proxy's names, so that dashboards made
// for kube-proxy read them. Registered once per process on the default
// registry (the agent's /metrics).
var (
	syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubeproxy_sync_proxy_rules_duration_seconds",
		Help:    "How long a sync of the proxy rules took, by kind (full or partial).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"kind"})
	rulesWritten = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubeproxy_sync_proxy_rules_iptables_restore_rules",
		Help:    "How many rules one sync wrote with iptables-restore.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10),
	})
	lastSync = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		Help: "When the proxy rules were last synced successfully (Unix seconds).",
	})
	restoreFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
		Help: "How many iptables-restore runs failed.",
	})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		prometheus.MustRegister(syncDuration, rulesWritten, lastSync, restoreFailures)
	})
}
