package proxy

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's Prometheus series. Label values are bounded: an
// extension label is a configured extension's name (or "-" for a request
// that names none the snapshot has).
type metrics struct {
	requests                          *prometheus.CounterVec
	duration                          *prometheus.HistogramVec
	decisions                         *prometheus.CounterVec
	allowed, denied, shadowed, failed prometheus.Counter
	limited                           *prometheus.CounterVec
	backendErrors                     *prometheus.CounterVec
	ejections                         *prometheus.CounterVec
	snapshots                         *prometheus.CounterVec
	extProblems                       *prometheus.CounterVec
	inFlight                          prometheus.Gauge
	websockets                        prometheus.Gauge
	streamsOpen                       prometheus.Gauge
	streamsEnded                      *prometheus.CounterVec

	// The series of each extension and status seen, so a request's
	// observation is a map read and two atomic adds rather than a label
	// lookup and a status code formatted.
	seriesMu sync.Mutex
	series   atomic.Pointer[map[seriesKey]requestSeries]
}

type seriesKey struct {
	extension string
	code      int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// request counts a request and observes its duration.
func (m *metrics) request(extension string, code int, took time.Duration) {
	key := seriesKey{extension, code}
	s, ok := (*m.series.Load())[key]
	if !ok {
		s = m.addSeries(key)
	}
	s.count.Inc()
	s.duration.Observe(took.Seconds())
}

func (m *metrics) addSeries(key seriesKey) requestSeries {
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	old := *m.series.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := requestSeries{
		count:    m.requests.WithLabelValues(key.extension, strconv.Itoa(key.code)),
		duration: m.duration.WithLabelValues(key.extension),
	}
	next := make(map[seriesKey]requestSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = s
	m.series.Store(&next)
	return s
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
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_proxy_streams_open",
			Help: "Open WebSockets and streamed responses, which each snapshot served decides again and their token's expiry ends.",
		}),
		streamsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_proxy_streams_ended_total",
			Help: "Open WebSockets and streamed responses the proxy ended, by reason: token_expired, unauthenticated (the token is refused now), denied (the policy), not_found (extension or Application gone), grant_changed (other headers), error (could not be checked).",
		}, []string{"reason"}),
	}
	m.series.Store(&map[seriesKey]requestSeries{})
	m.allowed, m.denied = m.decisions.WithLabelValues("allow"), m.decisions.WithLabelValues("deny")
	m.shadowed, m.failed = m.decisions.WithLabelValues("shadow"), m.decisions.WithLabelValues("error")
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.decisions, m.limited, m.backendErrors,
		m.ejections, m.snapshots, m.extProblems, m.inFlight, m.websockets, m.streamsOpen, m.streamsEnded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
