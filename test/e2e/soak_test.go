package e2e

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

var soakDuration = flag.Duration("fullstack.soak", 10*time.Minute, "how long BenchmarkFullStackSoak runs")

// BenchmarkFullStackSoak runs the full stack (see stack) for
// -fullstack.soak (10 minutes) with one configuration change a second
// through the API server and the webhook, steady extension traffic on both
// proxies, and the agents' connections cut every 30 s (they reconnect
// through the Service) and their tokens renewed as the kubelet does. It
// reports the requests that failed (target 0), the published versions a
// proxy never served nor went past (target 0), how long a version took to
// reach both proxies, and the growth of every process's RSS and goroutines
// after the first minute (target: flat). Issue 16 §4; make bench runs it.
func BenchmarkFullStackSoak(b *testing.B) {
	// One run, whatever b.N is: the soak is bounded by time.
	s := newStack(b, stackOptions{tokenTTL: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice := s.users["alice"]
	for _, app := range []string{"web", "web-staging"} {
		if r := s.run(s.tenantCfg, tenantApp("team-a", app, "team-a", "prod"), "apply", "-f", "-"); r.err != nil {
			b.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
		}
	}
	waitFor(b, 30*time.Second, "both proxies serve team-a/web", func() bool {
		return s.pods[0].call(alice, "metrics", "/x", "team-a:web", "team-a").status == 200 &&
			s.pods[1].call(alice, "metrics", "/x", "team-a:web", "team-a").status == 200
	})

	var sampled []procSample
	sampling, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() { sampled = sampleProcesses(sampling, s.processes(), 10*time.Second) })

	load := startLoad(s.pods, alice, 2, 10*time.Millisecond)
	start := time.Now()
	changes, changeErrs, cuts := 0, 0, 0
	tick := time.NewTicker(time.Second)
	for time.Since(start) < *soakDuration {
		<-tick.C
		changes++
		if err := s.change(ctx, changes); err != nil {
			changeErrs++
			b.Logf("change %d: %v", changes, err)
		}
		if changes%30 == 0 {
			cuts += s.agentSvc.cut()
		}
	}
	tick.Stop()
	res := load.stop()
	waitFor(b, 60*time.Second, "both replicas and both proxies serve one version", func() bool {
		v0, v1 := currentVersion(s.replicas[0]), currentVersion(s.replicas[1])
		return v0 != "" && v0 == v1 && s.pods[0].served() == v0 && s.pods[1].served() == v0
	})
	stopSampling()
	sampler.Wait()
	cancel()
	published := map[string]time.Time{}
	for _, r := range s.replicas {
		for v, at := range versionEvents(r.logs.String(), "snapshot published") {
			if first, ok := published[v]; !ok || at.Before(first) {
				published[v] = at
			}
		}
	}
	var served []map[string]time.Time
	for _, p := range s.pods {
		served = append(served, versionEvents(p.proxyLogs.String(), "snapshot served"))
	}
	report := deliveries(published, served, start)
	var waits []time.Duration
	for _, p := range s.pods {
		waits = append(waits, reconnectWaits(p.agentLogs.String())...)
	}
	slices.Sort(waits)
	growth := processGrowth(sampled, start.Add(min(time.Minute, *soakDuration/5)))

	b.Logf("%s: %d requests, %d failed; %d changes (%d refused), %d connections cut; load average %.2f",
		*soakDuration, res.ok+res.failed, res.failed, changes, changeErrs, cuts, testkit.LoadAvg())
	b.Logf("versions: %d published, %d lost, %d served that no replica published; delivery to both proxies p50 %s p99 %s max %s",
		report.published, report.lost, report.unknown, report.p50, report.p99, report.max)
	if len(waits) > 0 {
		b.Logf("agents reconnected %d times; they waited p50 %s, max %s before reconnecting", len(waits), waits[len(waits)/2], waits[len(waits)-1])
		b.ReportMetric(float64(waits[len(waits)-1].Milliseconds()), "reconnect-wait-max-ms")
	}
	for _, g := range growth {
		b.Logf("%-26s RSS %6.1f → %6.1f MB (max %6.1f), goroutines %4.0f → %4.0f (max %4.0f)", g.name, mb(g.rss0), mb(g.rss1), mb(g.rssMax), g.gr0, g.gr1, g.grMax)
	}
	if res.failed > 0 {
		b.Errorf("%d of %d requests failed; first: %v", res.failed, res.ok+res.failed, res.errors)
	}
	if report.lost > 0 || report.unknown > 0 {
		b.Errorf("%d versions lost, %d unknown versions served", report.lost, report.unknown)
	}
	if changeErrs > 0 {
		b.Errorf("%d of %d changes were refused", changeErrs, changes)
	}
	b.ReportMetric(float64(res.ok+res.failed), "requests")
	b.ReportMetric(float64(res.failed), "failed-requests")
	b.ReportMetric(float64(changes), "changes")
	b.ReportMetric(float64(report.published), "versions")
	b.ReportMetric(float64(report.lost), "versions-lost")
	b.ReportMetric(float64(report.p99.Milliseconds()), "delivery-p99-ms")
	b.ReportMetric(float64(report.p50.Milliseconds()), "delivery-p50-ms")
	b.ReportMetric(float64(cuts), "connections-cut")
	// Growth is the worst process's of each role; its size after the
	// first minute is the baseline the growth is read against.
	for _, role := range []string{"controller", "agent", "proxy"} {
		rss, gr := math.Inf(-1), math.Inf(-1)
		var rss0, gr0 float64
		for _, g := range growth {
			if g.role != role {
				continue
			}
			if d := mb(g.rss1 - g.rss0); d > rss {
				rss, rss0 = d, mb(g.rss0)
			}
			if d := g.gr1 - g.gr0; d > gr {
				gr, gr0 = d, g.gr0
			}
		}
		if math.IsInf(rss, -1) {
			continue // never sampled: the summary says "not run"
		}
		b.ReportMetric(rss, role+"-rss-growth-MB")
		b.ReportMetric(rss0, role+"-rss-start-MB")
		b.ReportMetric(gr, role+"-goroutine-growth")
		b.ReportMetric(gr0, role+"-goroutines-start")
	}
	b.ReportMetric(0, "ns/op")
}

// change makes configuration change n through the API server, as admins
// and tenants do: mostly an Application's destination, every 10th the
// policy (bob's grant), every 30th an extension's timeout.
func (s *stack) change(ctx context.Context, n int) error {
	switch {
	case n%30 == 0:
		var cm corev1.ConfigMap
		if err := s.client.Get(ctx, types.NamespacedName{Namespace: "argocd", Name: "gatehouse-extensions"}, &cm); err != nil {
			return err
		}
		timeout := "2s"
		if n%60 == 0 {
			timeout = "3s"
		}
		cm.Data["extension.config"] = replaceTimeout(cm.Data["extension.config"], timeout)
		return s.client.Update(ctx, &cm)
	case n%10 == 0:
		var cm corev1.ConfigMap
		if err := s.client.Get(ctx, types.NamespacedName{Namespace: "argocd", Name: "gatehouse-policy"}, &cm); err != nil {
			return err
		}
		fresh := mustConfigMap(policyConfigMap(n%20 == 0))
		cm.Data = fresh.Data
		return s.client.Update(ctx, &cm)
	}
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	name := []string{"web", "web-staging"}[n%2]
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: name}, app); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(app.Object, "gen-"+strconv.Itoa(n), "spec", "destination", "namespace"); err != nil {
		return err
	}
	return s.client.Update(ctx, app)
}

func replaceTimeout(config, timeout string) string {
	for _, old := range []string{"requestTimeout: 2s", "requestTimeout: 3s"} {
		config = strings.Replace(config, old, "requestTimeout: "+timeout, 1)
	}
	return config
}

func mustConfigMap(manifest string) *corev1.ConfigMap {
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(manifest), &cm); err != nil {
		panic(err)
	}
	return &cm
}

// versionEvents reads, from a process's text log, when each version was
// first logged with msg (the controller logs "snapshot published", the
// proxy "snapshot served"), from its own timestamps.
func versionEvents(log, msg string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) {
			continue
		}
		var at time.Time
		var version string
		for _, field := range strings.Fields(line) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "time":
				at, _ = time.Parse(time.RFC3339Nano, v)
			case "version":
				version = v
			}
		}
		if first, ok := out[version]; version != "" && !at.IsZero() && (!ok || at.Before(first)) {
			out[version] = at
		}
	}
	return out
}

// reconnectWaits are the waits an agent's log announces before it
// reconnects to the control plane.
func reconnectWaits(log string) []time.Duration {
	var out []time.Duration
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="control plane connection ended; reconnecting"`) {
			continue
		}
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "in="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

type versionReport struct {
	published, lost, unknown int
	p50, p99, max            time.Duration
}

// deliveries counts, for every version a replica published and every
// proxy, whether the proxy served it or a version published after it (an
// agent's one-slot queue skips versions superseded while it was busy:
// skipped, not lost), and how long it took until both proxies had.
// Versions published before since are only the starting point.
func deliveries(published map[string]time.Time, served []map[string]time.Time, since time.Time) versionReport {
	type pub struct {
		version string
		at      time.Time
	}
	var order []pub
	for v, at := range published {
		order = append(order, pub{v, at})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at.Before(order[j].at) })
	index := map[string]int{}
	for i, p := range order {
		index[p.version] = i
	}
	r := versionReport{}
	var lags []time.Duration
	for i, p := range order {
		if p.at.Before(since) {
			continue
		}
		r.published++
		latest := time.Time{}
		for _, byVersion := range served {
			first := time.Time{}
			for v, at := range byVersion {
				if j, ok := index[v]; ok && j >= i && (first.IsZero() || at.Before(first)) {
					first = at
				}
			}
			if first.IsZero() {
				r.lost++
				continue
			}
			latest = later(latest, first)
		}
		if !latest.IsZero() {
			lags = append(lags, max(0, latest.Sub(p.at)))
		}
	}
	for _, byVersion := range served {
		for v := range byVersion {
			if _, ok := index[v]; !ok {
				r.unknown++
			}
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		r.p50, r.p99, r.max = lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1]
	}
	return r
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// soakProc is a process the soak watches.
type soakProc struct {
	name, role string
	pid        int
	metrics    string // a /metrics URL with go_goroutines
}

func (s *stack) processes() []soakProc {
	var out []soakProc
	for i, r := range s.replicas {
		out = append(out, soakProc{fmt.Sprintf("controller-%d", i), "controller", r.cmd.Process.Pid, r.metricsURL() + "/metrics"})
	}
	for _, p := range s.pods {
		out = append(out,
			soakProc{p.name + " agent", "agent", p.agent.Process.Pid, "http://" + p.agentAdmin + "/metrics"},
			soakProc{p.name + " proxy", "proxy", p.proxy.Process.Pid, p.healthURL() + "/metrics"})
	}
	return out
}

type procSample struct {
	at         time.Time
	proc       soakProc
	rss        int64
	goroutines float64
}

// sampleProcesses samples every process's RSS and goroutines every
// interval, and once more when ctx ends.
func sampleProcesses(ctx context.Context, procs []soakProc, every time.Duration) []procSample {
	var out []procSample
	sample := func() {
		for _, p := range procs {
			if rss, _, err := testkit.MemOf(strconv.Itoa(p.pid)); err == nil {
				out = append(out, procSample{at: time.Now(), proc: p, rss: rss, goroutines: metric(p.metrics, "go_goroutines")})
			}
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		sample()
		select {
		case <-ctx.Done():
			sample()
			return out
		case <-t.C:
		}
	}
}

type procGrowth struct {
	name, role         string
	rss0, rss1, rssMax int64
	gr0, gr1, grMax    float64
}

// processGrowth compares each process's first sample at or after from with
// its last.
func processGrowth(samples []procSample, from time.Time) []procGrowth {
	by := map[string]*procGrowth{}
	var names []string
	for _, smp := range samples {
		if smp.at.Before(from) {
			continue
		}
		g, ok := by[smp.proc.name]
		if !ok {
			g = &procGrowth{name: smp.proc.name, role: smp.proc.role, rss0: smp.rss, gr0: smp.goroutines}
			by[smp.proc.name] = g
			names = append(names, smp.proc.name)
		}
		g.rss1, g.gr1 = smp.rss, smp.goroutines
		g.rssMax, g.grMax = max(g.rssMax, smp.rss), max(g.grMax, smp.goroutines)
	}
	sort.Strings(names)
	out := make([]procGrowth, 0, len(names))
	for _, n := range names {
		out = append(out, *by[n])
	}
	return out
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
