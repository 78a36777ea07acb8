package policies

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the engine's counters (Stats) as Prometheus metrics;
// register it where the engine runs. Reading them costs the hot path
// nothing: they are the counters Decide keeps anyway.
//
//	gatehouse_policy_cache_hits_total
//	gatehouse_policy_cache_misses_total
//	gatehouse_policy_evaluations_total
//	gatehouse_policy_evaluation_errors_total    (timeouts included)
//	gatehouse_policy_evaluation_timeouts_total  (stopped at the evaluation bound, and denied)
//	gatehouse_policy_cache_entries
func (e *Engine) Collector() prometheus.Collector { return engineCollector{e} }

type engineCollector struct{ e *Engine }

var (
	descCacheHits = prometheus.NewDesc("gatehouse_policy_cache_hits_total",
		"Decisions answered from the decision cache.", nil, nil)
	descCacheMisses = prometheus.NewDesc("gatehouse_policy_cache_misses_total",
		"Decisions not in the decision cache, so evaluated.", nil, nil)
	descEvaluations = prometheus.NewDesc("gatehouse_policy_evaluations_total",
		"Evaluations of the policy.", nil, nil)
	descErrors = prometheus.NewDesc("gatehouse_policy_evaluation_errors_total",
		"Evaluations that failed, timeouts included; the request was denied (allowed in shadow mode).", nil, nil)
	descTimeouts = prometheus.NewDesc("gatehouse_policy_evaluation_timeouts_total",
		"Evaluations stopped because they ran past the engine's bound; the request was denied (allowed in shadow mode).", nil, nil)
	descCacheEntries = prometheus.NewDesc("gatehouse_policy_cache_entries",
		"Decisions held in the decision cache.", nil, nil)
)

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCacheHits, descCacheMisses, descEvaluations, descErrors, descTimeouts, descCacheEntries} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.e.stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(descCacheHits, s.CacheHits)
	counter(descCacheMisses, s.CacheMisses)
	counter(descEvaluations, s.Evaluations)
	counter(descErrors, s.Errors)
	counter(descTimeouts, s.Timeouts)
	ch <- prometheus.MustNewConstMetric(descCacheEntries, prometheus.GaugeValue, float64(s.CacheEntries))
}
