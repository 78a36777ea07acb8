package controlplane

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
)

// metrics of the snapshot pipeline.
type metrics struct {
	builds    *prometheus.CounterVec
	duration  prometheus.Histogram
	files     prometheus.Gauge
	bytes     prometheus.Gauge
	problems  *prometheus.GaugeVec
	published prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, store *Store) (*metrics, error) {
	m := &metrics{
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_controlplane_snapshot_builds_total",
			Help: "Snapshot builds by result: published (a new version), unchanged (same version as before) or failed (the previous version stays).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatehouse_controlplane_snapshot_build_duration_seconds",
			Help:    "Time to build a snapshot from the store, after the debounce.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
		files: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_snapshot_files",
			Help: "Files in the published snapshot.",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_snapshot_bytes",
			Help: "Total size of the published snapshot's files.",
		}),
		problems: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_config_problems",
			Help: "Configuration problems found by the last build, by reason and severity (error: the part is left out or kept at its last good value).",
		}, []string{"reason", "severity"}),
		published: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_snapshot_published_timestamp_seconds",
			Help: "When the current snapshot version was published (Unix time).",
		}),
	}
	changes := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "gatehouse_controlplane_state_changes_total",
		Help: "Effective changes the sources made to the state the snapshot is built from; updates that change nothing the snapshot keeps (Application status, for one) are not counted.",
	}, func() float64 { return float64(store.Changes()) })
	for _, c := range []prometheus.Collector{m.builds, m.duration, m.files, m.bytes, m.problems, m.published, changes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) setProblems(ps []configproblem.Problem) {
	m.problems.Reset()
	for _, p := range ps {
		sev := "error"
		if p.Warning {
			sev = "warning"
		}
		m.problems.WithLabelValues(p.Reason, sev).Inc()
	}
}
