package proxy

import (
	"k8s.io/component-base/metrics"

	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// The proxy's metrics carry kube-proxy's names, so that dashboards made
// for kube-proxy read them.
var (
	syncDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:    "kubeproxy_sync_proxy_rules_duration_seconds",
		Help:    "How long a sync of the proxy rules took, by kind (full or partial).",
		Buckets: metrics.ExponentialBuckets(0.001, 2, 15),
	}, []string{"kind"})
	rulesWritten = metrics.NewHistogram(&metrics.HistogramOpts{
		Name:    "kubeproxy_sync_proxy_rules_iptables_restore_rules",
		Help:    "How many rules one sync wrote with iptables-restore.",
		Buckets: metrics.ExponentialBuckets(1, 4, 10),
	})
	lastSync = metrics.NewGauge(&metrics.GaugeOpts{
		Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		Help: "When the proxy rules were last synced successfully (Unix seconds).",
	})
	restoreFailures = metrics.NewCounter(&metrics.CounterOpts{
		Name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
		Help: "How many iptables-restore runs failed.",
	})
)

func registerMetrics() {
	skiffmetrics.Register(syncDuration, rulesWritten, lastSync, restoreFailures)
}
