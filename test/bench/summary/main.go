// Command summary reads the output of `go test -bench` (what make bench
// runs, over the whole module or a part of it) and writes one table into
// docs/performance.md: every headline figure beside its target and beside
// a baseline measured in the same run, with a verdict and the run that
// measured it. The rows of the benchmarks the input ran are written from
// it; every other row keeps the figure and run the document has for it; a
// row whose benchmark ran without reporting its metric, or that no run has
// measured, says "not measured yet". The header lists each run a row names
// (time, commit, go version, load average at the start and the end, from
// the run lines make bench writes around the output: see runs.go). The
// table replaces the one between the summary markers, or is put under the
// title.
//
//	go run ./test/bench/summary -in bin/bench.txt [-in more.txt ...] -doc docs/performance.md
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	module      = "github.com/gatehouse-dev/gatehouse/"
	beginMarker = "<!-- make bench: summary start (written by test/bench/summary; edits are overwritten) -->"
	endMarker   = "<!-- make bench: summary end -->"
)

// results are the metrics of every benchmark in a run, by
// "<package>:<benchmark name without the -GOMAXPROCS suffix>" and unit.
type results map[string]map[string]float64

// benchParser reads `go test -bench` output line by line: "pkg: PATH"
// lines name the package of the benchmark lines after them.
type benchParser struct {
	out results
	pkg string
}

func newParser() *benchParser { return &benchParser{out: results{}} }

// parse reads `go test -bench` output, every run in it together.
func parse(r io.Reader) (results, error) {
	p := newParser()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p.line(sc.Text())
	}
	return p.out, sc.Err()
}

// line reads one line and reports whether it was a result (or a failure).
func (p *benchParser) line(line string) bool {
	if pkg, ok := strings.CutPrefix(line, "pkg: "); ok {
		p.pkg = strings.TrimPrefix(strings.TrimSpace(pkg), module)
		return false
	}
	if name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: Benchmark"); ok {
		name = trimProcs("Benchmark" + strings.Fields(name)[0])
		if p.out[p.pkg+":"+name] == nil {
			p.out[p.pkg+":"+name] = map[string]float64{}
		}
		p.out[p.pkg+":"+name][failedUnit] = 1
		return true
	}
	if !strings.HasPrefix(line, "Benchmark") {
		return false
	}
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return false // a benchmark's name printed before its log, or a failure
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return false
	}
	m := map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			continue
		}
		m[f[i+1]] = v
	}
	p.out[p.pkg+":"+trimProcs(f[0])] = m
	return true
}

// failedUnit marks a benchmark that failed ("--- FAIL:"): its figures are
// not printed, and the table says it failed rather than that it did not run.
const failedUnit = "\x00failed"

// trimProcs drops the -GOMAXPROCS suffix of a benchmark's name.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// failed reports whether the benchmark, or one it runs under, failed.
func (m metric) failed(r results) bool {
	name := m.bench
	for {
		if r[m.pkg+":"+name][failedUnit] == 1 {
			return true
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}

// metric names one number of one benchmark.
type metric struct {
	pkg, bench, unit string
	// scale turns the number into the unit shown (e.g. ns → ms).
	scale float64
}

func (m metric) get(r results) (float64, bool) {
	v, ok := r[m.pkg+":"+m.bench][m.unit]
	if !ok {
		return 0, false
	}
	if m.scale != 0 {
		v *= m.scale
	}
	return v, true
}

// row is one figure of the table.
type row struct {
	component, figure string
	measured          metric
	show              string // format of a value, with its unit: "%.1f ms"
	target            string
	// ok decides the verdict from the value and the baseline's (NaN when
	// there is none).
	ok       func(v, base float64) bool
	base     *metric
	baseName string // what the baseline is
	baseShow string // format of the baseline, when not show's
}

const ns2ms = 1e-6

func atMost(limit float64) func(v, _ float64) bool {
	return func(v, _ float64) bool { return v <= limit }
}

// rows are the headline targets of every component, as docs/performance.md
// states them.
var rows = []row{
	{component: "admission", figure: "server CPU per review, Application CREATE, 16 connections", show: "%.1f µs",
		measured: metric{"test/bench", "BenchmarkAdmission/conns=16/review=application-create", "cpu-us/review", 0},
		target:   "≤ 1.15 × the no-op handler's", ok: func(v, b float64) bool { return v <= 1.15*b },
		base: &metric{"test/bench", "BenchmarkAdmission/conns=16/review=application-create", "noop-cpu-us/review", 0}, baseName: "no-op handler"},
	{component: "admission", figure: "server CPU per review, Application UPDATE (18.6 KB), 16 connections", show: "%.1f µs",
		measured: metric{"test/bench", "BenchmarkAdmission/conns=16/review=application-update", "cpu-us/review", 0},
		target:   "≤ 1.15 × the no-op handler's", ok: func(v, b float64) bool { return v <= 1.15*b },
		base: &metric{"test/bench", "BenchmarkAdmission/conns=16/review=application-update", "noop-cpu-us/review", 0}, baseName: "no-op handler"},
	{component: "admission", figure: "server CPU per review, AppProject UPDATE, 16 connections", show: "%.1f µs",
		measured: metric{"test/bench", "BenchmarkAdmission/conns=16/review=appproject-update", "cpu-us/review", 0},
		target:   "≤ 1.15 × the no-op handler's", ok: func(v, b float64) bool { return v <= 1.15*b },
		base: &metric{"test/bench", "BenchmarkAdmission/conns=16/review=appproject-update", "noop-cpu-us/review", 0}, baseName: "no-op handler"},
	{component: "admission", figure: "p99, Application CREATE, one connection", show: "%.0f µs",
		measured: metric{"test/bench", "BenchmarkAdmission/conns=1/review=application-create", "p99-us", 0},
		target:   "≤ 1,000 µs", ok: atMost(1000),
		base: &metric{"test/bench", "BenchmarkAdmission/conns=1/review=application-create", "noop-p99-us", 0}, baseName: "no-op handler"},
	{component: "admission", figure: "`gatehouse controller` RSS, 1,000 AppProjects and 10,000 Applications cached", show: "%.0f MB",
		measured: metric{"test/bench", "BenchmarkController", "peak-rss-MB", 0},
		target:   "≤ 150 MB", ok: atMost(150),
		base: &metric{"test/bench", "BenchmarkAdmission/cache=after-load", "rss-MB", 0}, baseName: "webhook-only test server, same cache"},

	{component: "agent channel", figure: "one-file change acked by 1,000 agents, 10 MB snapshot", show: "%.0f ms",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=10", "change-ms", 0},
		target:   "≤ 500 ms, and the 10 real agents' baseline ≤ 250 ms (issue 27)", ok: func(v, b float64) bool { return v <= 500 && b <= 250 },
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=10/real=10", "change-ms", 0}, baseName: "10 real agents, same run"},
	{component: "agent channel", figure: "cold start, 1,000 agents (10 real), 10 MB snapshot", show: "%.0f ms",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=10", "cold-ms", 0},
		target:   "≤ 1.5 × the floor", ok: func(v, b float64) bool { return v <= 1.5*b },
		base:     &metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=10", "floor-ms", 0},
		baseName: "floor: the same bytes over 1,000 bare TLS connections"},
	{component: "agent channel", figure: "cold start, 1,000 protocol-level agents, 10 MB snapshot", show: "%.0f ms",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=0", "cold-ms", 0},
		target:   "≤ 1.5 × the floor", ok: func(v, b float64) bool { return v <= 1.5*b },
		base:     &metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=0", "floor-ms", 0},
		baseName: "floor: the same bytes over 1,000 bare TLS connections"},
	{component: "agent channel", figure: "1 change/s to 1,000 agents, 10 MB: controller cores", show: "%.2f cores",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=0", "sustained-ctrl-cores", 0},
		target:   "< 1 core", ok: func(v, _ float64) bool { return v < 1 },
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=100KB/agents=1000/real=0", "sustained-ctrl-cores", 0}, baseName: "100 KB snapshot"},
	{component: "agent channel", figure: "controller peak RSS, 1,000 agents, 10 MB", show: "%.0f MB",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=1000/real=0", "ctrl-peak-MB", 0},
		target:   "≤ 300 MB", ok: atMost(300),
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentChannel/snapshot=10MB/agents=10/real=10", "ctrl-peak-MB", 0}, baseName: "10 agents"},
	{component: "agent channel", figure: "`gatehouse-agent` RSS, 10 MB snapshot", show: "%.1f MB",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentProcess/snapshot=10MB", "agent-rss-MB", 0},
		target:   "≤ 30 MB", ok: atMost(30),
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentProcess/snapshot=10MB", "agent-base-rss-MB", 0}, baseName: "connected, nothing published"},
	{component: "agent channel", figure: "agent server peak RSS, 10,000 agents", show: "%.0f MB",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentServerScale/agents=10000", "ctrl-peak-MB", 0},
		target:   "≤ 2,048 MB", ok: atMost(2048),
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentServerScale/agents=1000", "ctrl-peak-MB", 0}, baseName: "1,000 agents"},
	{component: "agent channel", figure: "one-file change acked by 10,000 agents", show: "%.0f ms",
		measured: metric{"test/bench/agentchannel", "BenchmarkAgentServerScale/agents=10000", "change-ms", 0},
		target:   "≤ 3,000 ms", ok: atMost(3000),
		base: &metric{"test/bench/agentchannel", "BenchmarkAgentServerScale/agents=1000", "change-ms", 0}, baseName: "1,000 agents"},

	{component: "control plane", figure: "full snapshot build (10,000 Applications, policy compiled)", show: "%.1f ms",
		measured: metric{"controlplane", "BenchmarkBuild/full", "ns/op", ns2ms},
		target:   "≤ 150 ms", ok: atMost(150),
		base: &metric{"controlplane", "BenchmarkBuild/no-change", "ns/op", ns2ms}, baseName: "rebuild, nothing changed"},
	{component: "control plane", figure: "new version after one Application changed", show: "%.1f ms",
		measured: metric{"controlplane", "BenchmarkBuild/one-application-change", "ns/op", ns2ms},
		target:   "≤ 20 ms", ok: atMost(20),
		base: &metric{"controlplane", "BenchmarkBuild/no-change", "ns/op", ns2ms}, baseName: "rebuild, nothing changed"},

	{component: "control plane", figure: "full snapshot build, 100,000 Applications, 5,000 AppProjects, 1,000 clusters", show: "%.0f ms",
		measured: metric{"controlplane", "BenchmarkBuildScale/projects=5000/apps=100000/full", "ns/op", ns2ms},
		target:   "≤ 500 ms", ok: atMost(500),
		base: &metric{"controlplane", "BenchmarkBuildScale/projects=5000/apps=1000/full", "ns/op", ns2ms}, baseName: "1,000 Applications"},
	{component: "control plane", figure: "new version after one Application changed, 100,000 Applications", show: "%.1f ms",
		measured: metric{"controlplane", "BenchmarkBuildScale/projects=5000/apps=100000/one-application-change", "ns/op", ns2ms},
		target:   "≤ 50 ms", ok: atMost(50),
		base: &metric{"controlplane", "BenchmarkBuildScale/projects=5000/apps=1000/one-application-change", "ns/op", ns2ms}, baseName: "1,000 Applications"},
	{component: "control plane", figure: "`gatehouse controller` RSS, 100,000 Applications and 1,000 AppProjects cached", show: "%.0f MB",
		measured: metric{"test/bench", "BenchmarkControllerScale/apps=100000", "rss-MB", 0},
		target:   "≤ 600 MB", ok: atMost(600),
		base: &metric{"test/bench", "BenchmarkControllerScale/apps=1000", "rss-MB", 0}, baseName: "1,000 Applications"},
	{component: "admission", figure: "webhook CPU per review at 100,000 Applications ÷ a 1,000-Application reference measured beside it, worst review kind, slowest of 3 rounds", show: "%.2f ×",
		measured: metric{"test/bench", "BenchmarkControllerScale/apps=100000", "worst-cpu-x-ref-max", 0},
		target:   "≤ 1.2 ×", ok: atMost(1.2),
		base: &metric{"test/bench", "BenchmarkControllerScale/apps=1000", "worst-cpu-x-ref-max", 0}, baseName: "the same ratio at 1,000 (the method's noise)", baseShow: "%.2f ×"},

	// Issue 27 §3: each of BenchmarkDecideGrants' three rounds has its own
	// p99, and the target holds in the slowest (p99-max-µs). The baseline is
	// the host's floor with a decision's allocations (floor-alloc: the same
	// CPU work as a decision's p50, allocating its 146 objects, no policy):
	// what this host gives such work at the p99 before any Rego runs.
	{component: "policy", figure: "decision p99, uncached, 1,000 grants (slowest of 3 rounds)", show: "%.0f µs",
		measured: metric{"policies", "BenchmarkDecideGrants/grants=1000/uncached", "p99-max-µs", 0},
		target:   "≤ 100 µs", ok: atMost(100),
		base: &metric{"policies", "BenchmarkDecideGrants/floor-alloc", "p99-max-µs", 0}, baseName: "the host's floor with a decision's allocations (floor-alloc)"},
	{component: "policy", figure: "decision p99, cache hit, 1,000 grants (slowest of 3 rounds)", show: "%.1f µs",
		measured: metric{"policies", "BenchmarkDecideGrants/grants=1000/cached", "p99-max-µs", 0},
		target:   "≤ 5 µs", ok: atMost(5)},
	// Near-flat in grants: ten times the grants may cost at most half as
	// much again at the p99 (the compiled policy, ten times larger, makes
	// each collection and each cache miss dearer).
	{component: "policy", figure: "decision p99, uncached, 10,000 grants (slowest of 3 rounds)", show: "%.0f µs",
		measured: metric{"policies", "BenchmarkDecideGrants/grants=10000/uncached", "p99-max-µs", 0},
		target:   "≤ 1.5 × the p99 at 1,000 grants", ok: func(v, b float64) bool { return v <= 1.5*b },
		base: &metric{"policies", "BenchmarkDecideGrants/grants=1000/uncached", "p99-max-µs", 0}, baseName: "1,000 grants"},
	// Compiling is linear in the grants (OPA's compiler stages visit each
	// rule a fixed number of times): ten times the grants may take at most
	// twelve times as long.
	{component: "policy", figure: "compile the default policy with 10,000 grants", show: "%.0f ms",
		measured: metric{"policies", "BenchmarkCompileGrants/grants=10000", "ns/op", ns2ms},
		target:   "≤ 12 × the compile at 1,000 grants", ok: func(v, b float64) bool { return v <= 12*b },
		base: &metric{"policies", "BenchmarkCompileGrants/grants=1000", "ns/op", ns2ms}, baseName: "1,000 grants"},
	{component: "policy", figure: "compile the default policy with 1,000 grants", show: "%.0f ms",
		measured: metric{"policies", "BenchmarkCompileGrants/grants=1000", "ns/op", ns2ms},
		target:   "≤ 200 ms", ok: atMost(200)},

	{component: "policy bundles", figure: "pull, verify and compile a 1 MiB bundle (OCI, TLS, bearer token)", show: "%.0f ms",
		measured: metric{"controlplane/source", "BenchmarkPull/oci-1MiB", "ns/op", ns2ms},
		target:   "≤ 300 ms", ok: atMost(300),
		base: &metric{"controlplane/source", "BenchmarkPull/verify-only-1MiB", "ns/op", ns2ms}, baseName: "verify and compile only, no network"},
	{component: "policy bundles", figure: "check of an unchanged bundle", show: "%.2f ms",
		measured: metric{"controlplane/source", "BenchmarkPull/oci-unchanged", "ns/op", ns2ms},
		target:   "≤ 5 ms, no body", ok: atMost(5)},
	{component: "policy bundles", figure: "a 1 MiB policy ConfigMap reviewed at apply", show: "%.0f ms",
		measured: metric{"webhook", "BenchmarkPolicyConfigMapReview", "ns/op", ns2ms},
		target:   "≤ 200 ms", ok: atMost(200),
		base: &metric{"policies", "BenchmarkCheckMegabyteOfGrants/CheckSource", "ns/op", ns2ms}, baseName: "the policy check alone"},

	{component: "proxy", figure: "CPU per request, everything on (authn, Rego, limits), over the tuned Go proxy's, worst of min / median / max", show: "%.2f ×",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "bare-cpu-ratio-worst", 0},
		target:   "≤ 1.00 × tuned httputil.ReverseProxy", ok: atMost(1.0),
		base: &metric{"test/bench/proxy", "BenchmarkProxyLoad", "bare-cpu-us/req", 0}, baseName: "tuned httputil.ReverseProxy, median", baseShow: "%.1f µs"},
	{component: "proxy", figure: "CPU per request over nginx's, median", show: "%.2f ×",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "nginx-cpu-ratio-median", 0},
		target:   "stated (moonshot ≤ 2 ×)", ok: atMost(2),
		base: &metric{"test/bench/proxy", "BenchmarkProxyLoad", "nginx-cpu-us/req", 0}, baseName: "nginx, median", baseShow: "%.1f µs"},
	{component: "proxy", figure: "allocations per request through the handler (`BenchmarkBesideBareProxy`)", show: "%.0f",
		measured: metric{"proxy", "BenchmarkBesideBareProxy/gatehouse", "allocs/op", 0},
		target:   "≤ 101, issue 27 §2: must not grow", ok: atMost(101),
		base: &metric{"proxy", "BenchmarkBesideBareProxy/bare", "allocs/op", 0}, baseName: "tuned httputil.ReverseProxy, same process", baseShow: "%.0f"},
	{component: "proxy", figure: "added p99 at half of peak load, over the tuned Go proxy's, worst of min / median / max", show: "%.2f ×",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "bare-added-p99-ratio-worst", 0},
		target:   "≤ 1.2 × tuned httputil.ReverseProxy's added p99", ok: atMost(1.2),
		base: &metric{"test/bench/proxy", "BenchmarkProxyLoad", "bare-added-p99-ms@half-peak", 0}, baseName: "tuned httputil.ReverseProxy, median", baseShow: "%.2f ms"},
	{component: "proxy", figure: "peak RSS, 10,000-Application snapshot (`gatehouse-proxy`)", show: "%.0f MB",
		measured: metric{"test/bench/proxy", "BenchmarkProxyMemory", "slim-peak-MB", 0},
		target:   "≤ 100 MB", ok: atMost(100),
		base: &metric{"test/bench/proxy", "BenchmarkProxyMemory", "one-binary-peak-MB", 0}, baseName: "`gatehouse proxy`, the one binary"},
	// The peak under full load with the snapshot swapped every second: the
	// heap is largest during a swap, so this is the figure the memory limit
	// has to hold (issue 27 §2, fourth session).
	{component: "proxy", figure: "peak RSS under full load while the snapshot changes every second, 10,000 Applications (`BenchmarkProxyLoad`)", show: "%.1f MB",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "gatehouse-peak-rss-MB", 0},
		target:   "≤ 100 MB", ok: atMost(100)},
	{component: "proxy", figure: "peak RSS, 100,000-Application snapshot, 5,000 projects, 1,000 clusters (`gatehouse-proxy`)", show: "%.0f MB",
		measured: metric{"test/bench/proxy", "BenchmarkProxyScaleMemory/apps=100000", "peak-rss-MB", 0},
		target:   "≤ 250 MB", ok: atMost(250),
		base: &metric{"test/bench/proxy", "BenchmarkProxyScaleMemory/apps=10000", "peak-rss-MB", 0}, baseName: "10,000 Applications"},
	{component: "proxy", figure: "failed requests while the snapshot changes every second", show: "%.0f",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "failed-during-swaps", 0},
		target:   "0", ok: atMost(0)},
	{component: "proxy", figure: "p99 while the snapshot changes every second, worst round", show: "%.2f ×",
		measured: metric{"test/bench/proxy", "BenchmarkProxyLoad", "swap-p99-ratio-max", 0},
		target:   "≤ 1.20 × the runs without swaps beside it", ok: atMost(1.2)},
	{component: "proxy", figure: "goroutine growth after 1,000,000 requests, outside the backend connection pool", show: "%+.0f",
		measured: metric{"test/bench/proxy", "BenchmarkProxySoak", "goroutine-growth", 0},
		target:   "flat (≤ +2)", ok: atMost(2)},
	{component: "proxy", figure: "open-file growth after 1,000,000 requests, outside the backend connection pool", show: "%+.0f",
		measured: metric{"test/bench/proxy", "BenchmarkProxySoak", "fd-growth", 0},
		target:   "flat (≤ +2)", ok: atMost(2)},

	{component: "full stack, 10 min soak", figure: "failed extension requests (steady load on both proxies)", show: "%.0f",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "failed-requests", 0},
		target:   "0", ok: atMost(0),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "requests", 0}, baseName: "requests sent"},
	{component: "full stack, 10 min soak", figure: "published versions no proxy served or went past", show: "%.0f",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "versions-lost", 0},
		target:   "0", ok: atMost(0),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "versions", 0}, baseName: "versions published"},
	{component: "full stack, 10 min soak", figure: "a version reaches both proxies, p99", show: "%.0f ms",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "delivery-p99-ms", 0},
		target:   "≤ 2,000 ms", ok: atMost(2000),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "delivery-p50-ms", 0}, baseName: "p50"},
	{component: "full stack, 10 min soak", figure: "controller RSS growth after the first minute (worst replica)", show: "%+.1f MB",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "controller-rss-growth-MB", 0},
		target:   "flat (≤ +10 MB)", ok: atMost(10),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "controller-rss-start-MB", 0}, baseName: "RSS after the first minute", baseShow: "%.1f MB"},
	{component: "full stack, 10 min soak", figure: "agent RSS growth (worst agent)", show: "%+.1f MB",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "agent-rss-growth-MB", 0},
		target:   "flat (≤ +10 MB)", ok: atMost(10),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "agent-rss-start-MB", 0}, baseName: "RSS after the first minute", baseShow: "%.1f MB"},
	{component: "full stack, 10 min soak", figure: "proxy RSS growth (worst proxy)", show: "%+.1f MB",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "proxy-rss-growth-MB", 0},
		target:   "flat (≤ +10 MB)", ok: atMost(10),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "proxy-rss-start-MB", 0}, baseName: "RSS after the first minute", baseShow: "%.1f MB"},
	{component: "full stack, 10 min soak", figure: "goroutine growth, controllers (worst replica)", show: "%+.0f",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "controller-goroutine-growth", 0},
		target:   "flat (≤ +2)", ok: atMost(2),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "controller-goroutines-start", 0}, baseName: "goroutines after the first minute", baseShow: "%.0f"},
	{component: "full stack, 10 min soak", figure: "goroutine growth, agents (worst)", show: "%+.0f",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "agent-goroutine-growth", 0},
		target:   "flat (≤ +2)", ok: atMost(2),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "agent-goroutines-start", 0}, baseName: "goroutines after the first minute", baseShow: "%.0f"},
	{component: "full stack, 10 min soak", figure: "goroutine growth, proxies (worst)", show: "%+.0f",
		measured: metric{"test/e2e", "BenchmarkFullStackSoak", "proxy-goroutine-growth", 0},
		target:   "flat (≤ +2)", ok: atMost(2),
		base: &metric{"test/e2e", "BenchmarkFullStackSoak", "proxy-goroutines-start", 0}, baseName: "goroutines after the first minute", baseShow: "%.0f"},
}

// inputs are the -in flags: files of `go test -bench` output.
type inputs []string

func (in *inputs) String() string     { return strings.Join(*in, ",") }
func (in *inputs) Set(s string) error { *in = append(*in, s); return nil }

func main() {
	var in inputs
	flag.Var(&in, "in", "go test -bench output, with its run lines (repeat for several files; default: standard input)")
	docPath := flag.String("doc", "docs/performance.md", "the document to write the table into")
	loadStart := flag.String("load-start", "", "load average when the run started (/proc/loadavg), for input without run lines")
	flag.Parse()
	if err := run(in, *docPath, *loadStart); err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
}

func run(in []string, docPath, loadStart string) error {
	fb := fallback{now: time.Now(), commit: headCommit(), loadStart: loadAvg(loadStart)}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		fb.loadEnd = loadAvg(string(raw))
	}
	var runs []*benchRun
	read := func(name string, r io.Reader) error {
		rs, err := readRuns(r, fb)
		if err != nil {
			return fmt.Errorf("read benchmark output %s: %w", name, err)
		}
		runs = append(runs, rs...)
		return nil
	}
	if len(in) == 0 {
		if err := read("from standard input", os.Stdin); err != nil {
			return err
		}
	}
	for _, name := range in {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = read(name, f)
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	if len(runs) == 0 {
		return errors.New("no benchmark results in the input")
	}
	distinctIDs(runs)
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	old, err := readTable(string(doc))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	tbl, dropped := summary(runs, old)
	for _, d := range dropped {
		fmt.Fprintf(os.Stderr, "summary: %s: a row no longer in test/bench/summary's rows, left out: %s\n", docPath, d)
	}
	out, err := splice(doc, tbl)
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	if bytes.Equal(out, doc) {
		return nil
	}
	return os.WriteFile(docPath, out, 0o644)
}

// distinctIDs numbers runs that would otherwise share an id (the same
// minute and commit).
func distinctIDs(runs []*benchRun) {
	seen := map[string]int{}
	for _, r := range runs {
		id := r.id()
		seen[id]++
		if n := seen[id]; n > 1 {
			r.seq = n
		}
	}
}
