package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series. The gauges are computed from
// the registry when scraped, so they can never drift from it.
type metrics struct {
	announcements prometheus.Counter
	// deltaAnnouncements counts the announcements sent as a delta.
	deltaAnnouncements prometheus.Counter
	manifestRequests   prometheus.Counter
	acks               prometheus.Counter
	nacks              prometheus.Counter
	authFailures       *prometheus.CounterVec
	handshakeFailures  *prometheus.CounterVec
	downloadBytes      prometheus.Counter
	downloads          *prometheus.CounterVec
	ackLatency         prometheus.Histogram

	connectedDesc *prometheus.Desc
	handshakeDesc *prometheus.Desc
	staleDesc     *prometheus.Desc
	stateDesc     *prometheus.Desc
	snapshotDesc  *prometheus.Desc
	certDesc      *prometheus.Desc
	s             *Server
}

func newMetrics(s *Server) *metrics {
	return &metrics{
		s: s,
		announcements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_announcements_total",
			Help: "ConfigAvailable messages sent to agents.",
		}),
		deltaAnnouncements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_delta_announcements_total",
			Help: "ConfigAvailable messages sent as a delta from the version the agent serves (included in announcements_total).",
		}),
		manifestRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_manifest_requests_total",
			Help: "ManifestRequests received: agents that lacked the base of a delta announcement and asked for the full manifest.",
		}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_acks_total",
			Help: "ConfigStatus APPLIED reports received from agents.",
		}),
		nacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_nacks_total",
			Help: "ConfigStatus REJECTED reports received from agents.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_auth_failures_total",
			Help: "Streams refused before their handler ran, by gRPC code (Unauthenticated: bad token; Unavailable: token could not be checked).",
		}, []string{"code"}),
		handshakeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_handshake_failures_total",
			Help: "Connections closed before TLS was set up, by reason (timeout, no_client_certificate, bad_client_certificate, closed, other; address_limit: closed on arrival, as its address had the most connections in their handshake already).",
		}, []string{"reason"}),
		downloadBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_download_bytes_total",
			Help: "File content bytes sent on Download streams.",
		}),
		downloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_agentserver_downloads_total",
			Help: "Download streams finished, by gRPC code.",
		}, []string{"code"}),
		ackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatehouse_agentserver_ack_duration_seconds",
			Help:    "Time from sending a ConfigAvailable to the agent reporting it APPLIED.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		connectedDesc: prometheus.NewDesc("gatehouse_agentserver_connected_agents",
			"Agents with an open CommandChannel to this replica.", nil, nil),
		handshakeDesc: prometheus.NewDesc("gatehouse_agentserver_handshakes_in_progress",
			"Connections in their TLS handshake; at the server's limit (256 by default) further connections wait to be accepted, and past the limit per source address (16 by default) they are closed.", nil, nil),
		staleDesc: prometheus.NewDesc("gatehouse_agentserver_agents_stale",
			"Connected agents that have not served the current version for longer than the stale bound (--agent-stale-after): their proxies serve older policy and revocations.", nil, nil),
		stateDesc: prometheus.NewDesc("gatehouse_agentserver_agents",
			"Connected agents by the state of their last ConfigStatus (none, written, applied, rejected) and whether they serve the current version.",
			[]string{"state", "current"}, nil),
		snapshotDesc: prometheus.NewDesc("gatehouse_agentserver_snapshot_info",
			"The snapshot version being announced to agents (value 1).",
			[]string{"version"}, nil),
		certDesc: prometheus.NewDesc("gatehouse_agentserver_certificate_expiry_timestamp_seconds",
			"When the serving certificate expires (Unix time).", nil, nil),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, reason := range handshakeReasons {
		m.handshakeFailures.WithLabelValues(reason) // every series from the start, for rate()
	}
	for _, c := range []prometheus.Collector{m.announcements, m.deltaAnnouncements, m.manifestRequests, m.acks, m.nacks, m.authFailures, m.handshakeFailures, m.downloadBytes, m.downloads, m.ackLatency, m} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Describe implements prometheus.Collector for the computed gauges.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.connectedDesc
	ch <- m.handshakeDesc
	ch <- m.staleDesc
	ch <- m.stateDesc
	ch <- m.snapshotDesc
	ch <- m.certDesc
}

// Collect implements prometheus.Collector for the computed gauges.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	r := m.s.Report()
	connected, stale := 0, 0
	type key struct{ state, current string }
	counts := map[key]int{}
	for _, st := range []string{"none", "written", "applied", "rejected"} {
		for _, cur := range []string{"true", "false"} {
			counts[key{st, cur}] = 0
		}
	}
	for _, a := range r.Agents {
		if !a.Connected {
			continue
		}
		connected++
		if a.Stale {
			stale++
		}
		cur := "false"
		if r.Version != "" && a.VersionServed == r.Version {
			cur = "true"
		}
		counts[key{stateLabel(a.LastStatus), cur}]++
	}
	ch <- prometheus.MustNewConstMetric(m.connectedDesc, prometheus.GaugeValue, float64(connected))
	ch <- prometheus.MustNewConstMetric(m.staleDesc, prometheus.GaugeValue, float64(stale))
	var inHandshake int64
	if l := m.s.lis.Load(); l != nil {
		inHandshake = l.inHandshake()
	}
	ch <- prometheus.MustNewConstMetric(m.handshakeDesc, prometheus.GaugeValue, float64(inHandshake))
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.stateDesc, prometheus.GaugeValue, float64(n), k.state, k.current)
	}
	if r.Version != "" {
		ch <- prometheus.MustNewConstMetric(m.snapshotDesc, prometheus.GaugeValue, 1, r.Version)
	}
	if na := m.s.tls.notAfter(); !na.IsZero() {
		ch <- prometheus.MustNewConstMetric(m.certDesc, prometheus.GaugeValue, float64(na.Unix()))
	}
}

func stateLabel(s string) string {
	switch s {
	case statusWritten:
		return "written"
	case StatusApplied:
		return "applied"
	case StatusRejected:
		return "rejected"
	}
	return "none"
}
