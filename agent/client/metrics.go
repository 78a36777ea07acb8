package client

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// Metrics are the agent's Prometheus series; a nil *Metrics records nothing.
type Metrics struct {
	connected_      prometheus.Gauge
	connects        prometheus.Counter
	results         *prometheus.CounterVec
	downloadBytes   prometheus.Counter
	downloadRetries prometheus.Counter
	failures        *prometheus.CounterVec
	checkTime       prometheus.Gauge
	checkOK         prometheus.Gauge
	// status is the agent's Status func, set by New; the stale and behind
	// gauges read it when scraped, so they never drift from /readyz.
	status atomic.Pointer[func() Status]
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
			Name: "gatehouse_agent_download_bytes_total", Help: "File content bytes received and verified: downloaded, or sent with a delta announcement.",
		}),
		downloadRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agent_download_failures_total", Help: "Downloads that failed verification.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_agent_apply_failures_total",
			Help: "Failed attempts to apply a snapshot, by class: transient (the volume or the proxy failed; retried with backoff) or deterministic (the content is invalid).",
		}, []string{"class"}),
		checkTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_agent_full_check_timestamp_seconds",
			Help: "When the version on the volume was last checked in full (every file read and hashed), at start and every --verify-interval; 0 before the first.",
		}),
		checkOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_agent_full_check_ok",
			Help: "1 if the last full check of the version on the volume passed (or there was none to check), 0 if it found it damaged.",
		}),
	}
	for _, class := range []string{"transient", "deterministic"} {
		m.failures.WithLabelValues(class)
	}
	stale := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_agent_stale",
		Help: "1 while the agent has served another version than the control plane's current one for longer than --stale-after: its proxy serves older policy and revocations.",
	}, func() float64 {
		if m.current().Stale {
			return 1
		}
		return 0
	})
	behind := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_agent_behind_seconds",
		Help: "How long the agent has served another version than the control plane's current one (0 while it serves it).",
	}, func() float64 { return m.current().Behind.Seconds() })
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_agent_ready",
		Help: "1 while /readyz answers 200.",
	}, func() float64 {
		if m.current().Ready {
			return 1
		}
		return 0
	})
	for _, c := range []prometheus.Collector{m.connected_, m.connects, m.results, m.downloadBytes, m.downloadRetries, m.failures, m.checkTime, m.checkOK, stale, behind, ready} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe makes the gauges read status.
func (m *Metrics) observe(status func() Status) {
	if m != nil {
		m.status.Store(&status)
	}
}

func (m *Metrics) current() Status {
	if f := m.status.Load(); f != nil {
		return (*f)()
	}
	return Status{}
}

func (m *Metrics) failure(class agentv1.RejectionClass) {
	if m == nil {
		return
	}
	label := "deterministic"
	if class == agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
		label = "transient"
	}
	m.failures.WithLabelValues(label).Inc()
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

// fullCheck records a full check of the volume's version.
func (m *Metrics) fullCheck(ok bool, at time.Time) {
	if m == nil {
		return
	}
	m.checkTime.Set(float64(at.UnixNano()) / 1e9)
	if ok {
		m.checkOK.Set(1)
	} else {
		m.checkOK.Set(0)
	}
}
