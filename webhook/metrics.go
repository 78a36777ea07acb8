package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the webhook's Prometheus series. A nil *Metrics records
// nothing, so tests and `admit` need none.
type Metrics struct {
	reviews  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_reviews_total",
			Help: "AdmissionReviews answered, by resource, operation and verdict (allowed, denied, error, malformed).",
		}, []string{"resource", "operation", "verdict"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_webhook_review_duration_seconds",
			Help:    "Time to decode, evaluate and answer one AdmissionReview.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, .5, 1},
		}, []string{"resource"}),
	}
	for _, c := range []prometheus.Collector{m.reviews, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(resource, op, verdict string, start time.Time) {
	if m == nil {
		return
	}
	m.reviews.WithLabelValues(resource, op, verdict).Inc()
	m.duration.WithLabelValues(resource).Observe(time.Since(start).Seconds())
}
