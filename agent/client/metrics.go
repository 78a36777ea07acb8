package client

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus series; a nil *Metrics records nothing.
type Metrics struct {
	connected_      prometheus.Gauge
	connects        prometheus.Counter
	results         *prometheus.CounterVec
	downloadBytes   prometheus.Counter
	downloadRetries prometheus.Counter
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		connected_: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_agent_connected", Help: "1 while the command channel to the control plane is open.",
		}),
		connects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agent_connect_attempts_total", Help: "Attempts to open the command channel.",
		}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_agent_snapshots_total", Help: "Announced snapshots by outcome (applied, rejected).",
		}, []string{"result"}),
		downloadBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agent_download_bytes_total", Help: "File content bytes downloaded and verified.",
		}),
		downloadRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agent_download_failures_total", Help: "Downloads that failed verification.",
		}),
	}
	for _, c := range []prometheus.Collector{m.connected_, m.connects, m.results, m.downloadBytes, m.downloadRetries} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) connectAttempt() {
	if m != nil {
		m.connects.Inc()
	}
}

func (m *Metrics) connected() {
	if m != nil {
		m.connected_.Set(1)
	}
}

func (m *Metrics) disconnected() {
	if m != nil {
		m.connected_.Set(0)
	}
}

func (m *Metrics) result(r string) {
	if m != nil {
		m.results.WithLabelValues(r).Inc()
	}
}

func (m *Metrics) downloaded(n int64) {
	if m != nil {
		m.downloadBytes.Add(float64(n))
	}
}

func (m *Metrics) downloadFailed() {
	if m != nil {
		m.downloadRetries.Inc()
	}
}
