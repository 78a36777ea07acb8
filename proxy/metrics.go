package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's Prometheus series. Label values are bounded: an
// extension label is a configured extension's name (or "-" for a request
// that names none the snapshot has).
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	decisions     *prometheus.CounterVec
	limited       *prometheus.CounterVec
	backendErrors *prometheus.CounterVec
	ejections     *prometheus.CounterVec
	snapshots     *prometheus.CounterVec
	extProblems   *prometheus.CounterVec
	inFlight      prometheus.Gauge
	websockets    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_requests_total",
			Help: "Extension requests answered, by extension and HTTP status code.",
		}, []string{"extension", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_proxy_request_duration_seconds",
			Help:    "Time from receiving an extension request to the end of its response, streaming included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"extension"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_decisions_total",
			Help: "Policy decisions, by outcome: allow, deny, shadow (denied but not enforced) or error (denied: the policy failed or ran out of time).",
		}, []string{"outcome"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_limited_requests_total",
			Help: "Requests refused by a limit: user or extension (429), concurrency (503).",
		}, []string{"extension", "limit"}),
		backendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_backend_errors_total",
			Help: "Requests that got no backend response, by kind: unreachable (502), timeout (504), client_timeout (408), too_large (413), canceled (the client went away).",
		}, []string{"extension", "kind"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_backend_ejections_total",
			Help: "Times a backend URL failed to connect and was skipped for a while (passive health).",
		}, []string{"extension"}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_snapshots_total",
			Help: "Snapshot versions the proxy loaded (served) or refused (rejected; the last good one kept serving).",
		}, []string{"result"}),
		extProblems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_extension_problems_total",
			Help: "Extensions a snapshot defined that the proxy could not set up (their last good definition kept serving).",
		}, []string{"extension"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_proxy_requests_in_flight",
			Help: "Extension requests being served.",
		}),
		websockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_proxy_websockets_open",
			Help: "WebSocket connections being proxied.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.decisions, m.limited, m.backendErrors,
		m.ejections, m.snapshots, m.extProblems, m.inFlight, m.websockets} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
