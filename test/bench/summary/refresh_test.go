package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Figures of rows the tests below follow (as rows names them).
const (
	buildFull   = "full snapshot build (10,000 Applications, policy compiled)"
	buildOne    = "new version after one Application changed"
	proxyCPU    = "CPU per request, everything on (authn, Rego, limits), over the tuned Go proxy's, worst of min / median / max"
	proxyNginx  = "CPU per request over nginx's, median"
	proxySwaps  = "failed requests while the snapshot changes every second"
	proxyGorout = "goroutine growth after 1,000,000 requests, outside the backend connection pool"
	proxyFDs    = "open-file growth after 1,000,000 requests, outside the backend connection pool"
	proxyRSS    = "peak RSS, 100,000-Application snapshot, 5,000 projects, 1,000 clusters (`gatehouse-proxy`)"
	proxyP99    = "added p99 at half of peak load, over the tuned Go proxy's, worst of min / median / max"
	swapP99     = "p99 while the snapshot changes every second, worst round"
	threeRuns   = "2026-11-28 11:00 UTC, 7e69923; 2026-11-28 11:05 UTC, 7e69923; 2026-11-28 11:10 UTC, 7e69923"
)

// full is a run of every benchmark these tests follow, with its run lines.
const full = `# gatehouse-bench start: 2026-11-24T21:11:05Z commit=cafb83c go=go1.26.8 cores=2 load=2.19/1.59/1.92
# gatehouse-bench command: make bench
pkg: github.com/gatehouse-dev/gatehouse/controlplane
BenchmarkBuild/full-2                20    48000000 ns/op
BenchmarkBuild/no-change-2           20     8300000 ns/op
BenchmarkBuild/one-application-change-2  20  8300000 ns/op
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   1   0.98 bare-cpu-ratio-worst   37.20 bare-cpu-us/req   2.10 nginx-cpu-ratio-median   18.0 nginx-cpu-us/req   0 failed-during-swaps   1.10 bare-added-p99-ratio-worst   1.47 bare-added-p99-ms@half-peak   1.03 swap-p99-ratio-max
BenchmarkProxySoak-2   1   0 goroutine-growth   1 fd-growth
# gatehouse-bench end: 2026-11-24T23:10:00Z load=0.52/0.99/1.68
`

// summarize is the document after the runs of each input, in turn, as
// make bench writes it.
func summarize(t *testing.T, doc string, inputs ...string) string {
	t.Helper()
	for i, in := range inputs {
		runs, err := readRuns(strings.NewReader(in), testFallback)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		old, err := readTable(doc)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		tbl, _ := summary(runs, old)
		out, err := splice([]byte(doc), tbl)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		doc = string(out)
	}
	return doc
}

// rowOf is the row of the document's table with this figure.
func rowOf(t *testing.T, doc, figure string) cells {
	t.Helper()
	tbl, err := readTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range tbl.order {
		if c := tbl.rows[k]; c[1] == figure {
			return c
		}
	}
	t.Fatalf("no row %q in\n%s", figure, doc)
	return cells{}
}

const emptyDoc = "# Performance\n\nIntro.\n\n## Admission\n\nText.\n"

func TestAPartialRunRefreshesItsRowsAndKeepsEveryOther(t *testing.T) {
	base := summarize(t, emptyDoc, full)
	for _, tc := range []struct {
		name, part string
		// want: the rows the part changes, by figure; every other row of
		// base must come out exactly as it went in.
		want map[string]cells
	}{{
		name: "the proxy's load benchmark alone",
		part: `# gatehouse-bench start: 2026-11-28T10:20:01Z commit=7e69923 go=go1.26.9 cores=2 load=1.64/1.61/2.05
# gatehouse-bench command: make bench BENCH_PKGS='./test/bench/proxy/' BENCH_RUN='ProxyLoad'
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   1   0.91 bare-cpu-ratio-worst   120.5 bare-cpu-us/req   2.40 nginx-cpu-ratio-median   40.2 nginx-cpu-us/req   0 failed-during-swaps   0.62 bare-added-p99-ratio-worst   4.19 bare-added-p99-ms@half-peak   1.14 swap-p99-ratio-max
# gatehouse-bench end: 2026-11-28T10:23:00Z load=2.92/2.00/2.10
`,
		want: map[string]cells{
			proxyCPU:   {"proxy", proxyCPU, "≤ 1.00 × tuned httputil.ReverseProxy", "0.91 ×", "tuned httputil.ReverseProxy, median: 120.5 µs", "met", "2026-11-28 10:20 UTC, 7e69923"},
			proxyNginx: {"proxy", proxyNginx, "stated (moonshot ≤ 2 ×)", "2.40 ×", "nginx, median: 40.2 µs", "missed", "2026-11-28 10:20 UTC, 7e69923"},
			proxySwaps: {"proxy", proxySwaps, "0", "0", "—", "met", "2026-11-28 10:20 UTC, 7e69923"},
			proxyP99:   {"proxy", proxyP99, "≤ 1.2 × tuned httputil.ReverseProxy's added p99", "0.62 ×", "tuned httputil.ReverseProxy, median: 4.19 ms", "met", "2026-11-28 10:20 UTC, 7e69923"},
			swapP99:    {"proxy", swapP99, "≤ 1.20 × the runs without swaps beside it", "1.14 ×", "—", "met", "2026-11-28 10:20 UTC, 7e69923"},
		},
	}, {
		name: "a benchmark that no longer reports a metric: not measured yet, not the old figure",
		part: `# gatehouse-bench start: 2026-11-28T10:30:00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxySoak-2   1   0 goroutine-growth
# gatehouse-bench end: 2026-11-28T10:32:00Z load=1.00/1.00/1.00
`,
		want: map[string]cells{
			proxyGorout: {"proxy", proxyGorout, "flat (≤ +2)", "+0", "—", "met", "2026-11-28 10:30 UTC, 7e69923"},
			proxyFDs:    {"proxy", proxyFDs, "flat (≤ +2)", notMeasured, "—", "—", "2026-11-28 10:30 UTC, 7e69923"},
		},
	}, {
		name: "a benchmark that failed: failed, not the old figure",
		part: `# gatehouse-bench start: 2026-11-28T10:40:00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00
pkg: github.com/gatehouse-dev/gatehouse/controlplane
--- FAIL: BenchmarkBuild/full
BenchmarkBuild/no-change-2   20   9000000 ns/op
# gatehouse-bench end: 2026-11-28T10:41:00Z load=1.00/1.00/1.00
`,
		want: map[string]cells{
			buildFull: {"control plane", buildFull, "≤ 150 ms", "benchmark failed", "rebuild, nothing changed: 9.0 ms", "missed", "2026-11-28 10:40 UTC, 7e69923"},
		},
	}, {
		name: "three runs of one benchmark: the median, the range, missed when one run misses",
		part: `# gatehouse-bench start: 2026-11-28T11:00:00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   1   0.90 bare-cpu-ratio-worst   120 bare-cpu-us/req   1 failed-during-swaps
# gatehouse-bench end: 2026-11-28T11:03:00Z load=1.00/1.00/1.00
# gatehouse-bench start: 2026-11-28T11:05:00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   1   1.05 bare-cpu-ratio-worst   110 bare-cpu-us/req   0 failed-during-swaps
# gatehouse-bench end: 2026-11-28T11:08:00Z load=1.00/1.00/1.00
# gatehouse-bench start: 2026-11-28T11:10:00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   1   0.95 bare-cpu-ratio-worst   100 bare-cpu-us/req   0 failed-during-swaps
# gatehouse-bench end: 2026-11-28T11:13:00Z load=1.00/1.00/1.00
`,
		want: map[string]cells{
			proxyCPU: {"proxy", proxyCPU, "≤ 1.00 × tuned httputil.ReverseProxy", "0.95 × (median of 3 runs; 0.90 × to 1.05 ×)",
				"tuned httputil.ReverseProxy, median: 110.0 µs (median of 3 runs; 100.0 µs to 120.0 µs)", "missed",
				threeRuns},
			proxySwaps: {"proxy", proxySwaps, "0", "0 (median of 3 runs; 0 to 1)", "—", "missed",
				threeRuns},
			// Measured by none of the three runs: the row stays
			// unmeasured rather than take a figure from nowhere.
			proxyNginx: {"proxy", proxyNginx, "stated (moonshot ≤ 2 ×)", notMeasured, "nginx, median: not run", "—", threeRuns},
			proxyP99:   {"proxy", proxyP99, "≤ 1.2 × tuned httputil.ReverseProxy's added p99", notMeasured, "tuned httputil.ReverseProxy, median: not run", "—", threeRuns},
			swapP99:    {"proxy", swapP99, "≤ 1.20 × the runs without swaps beside it", notMeasured, "—", "—", threeRuns},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(t, base, tc.part)
			partRuns, _ := readRuns(strings.NewReader(tc.part), testFallback)
			before, _ := readTable(base)
			for _, k := range before.order {
				old := before.rows[k]
				now := rowOf(t, got, old[1])
				pts := rowNamed(t, old[1]).measure(partRuns)
				if want, listed := tc.want[old[1]]; listed && now != want {
					t.Errorf("refreshed row\n got %q\nwant %q", now, want)
				}
				if len(pts) > 0 { // the part ran its benchmark: refreshed
					if now[6] != runIDs(pts) {
						t.Errorf("a row the run measured names %q, not the run", now[6])
					}
					if now[3] == old[3] && now[6] == old[6] {
						t.Errorf("refreshed row kept its old figure and run: %q", now)
					}
					continue
				}
				if now != old {
					t.Errorf("a row the run did not measure changed:\n was %q\n now %q", old, now)
				}
			}
		})
	}
}

func rowNamed(t *testing.T, figure string) row {
	t.Helper()
	for _, r := range rows {
		if r.figure == figure {
			return r
		}
	}
	t.Fatalf("no row %q", figure)
	return row{}
}

func TestRowsNoRunMeasuredSayNotMeasuredYet(t *testing.T) {
	doc := summarize(t, emptyDoc, full)
	if got := rowOf(t, doc, proxyRSS); got != (cells{"proxy", proxyRSS, "≤ 250 MB", notMeasured, "10,000 Applications: " + notMeasured, "—", "—"}) {
		t.Errorf("a row no run measured: %q", got)
	}
	// Every row of rows is in the table, measured or not.
	tbl, _ := readTable(doc)
	if len(tbl.rows) != len(rows) {
		t.Errorf("%d rows in the table, %d in rows", len(tbl.rows), len(rows))
	}
}

func TestTheHeaderListsEveryRunARowNames(t *testing.T) {
	doc := summarize(t, emptyDoc, full, `# gatehouse-bench start: 2026-11-28T10:20:01Z commit=7e69923 go=go1.26.9 cores=2 load=1.64/1.61/2.05
# gatehouse-bench command: make bench BENCH_PKGS='./controlplane/' BENCH_RUN='Build'
pkg: github.com/gatehouse-dev/gatehouse/controlplane
BenchmarkBuild/full-2                20    50000000 ns/op
# gatehouse-bench end: 2026-11-28T10:23:00Z load=2.92/2.00/2.10
`)
	for _, want := range []string{
		"- 2026-11-24 21:11 UTC, cafb83c: `make bench`, go1.26.8, 2 cores; load average at the start 2.19 1.59 1.92, at the end 0.52 0.99 1.68\n",
		"- 2026-11-28 10:20 UTC, 7e69923: `make bench BENCH_PKGS='./controlplane/' BENCH_RUN='Build'`, go1.26.9, 2 cores; load average at the start 1.64 1.61 2.05, at the end 2.92 2.00 2.10\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the header lacks\n%s\n%s", want, doc)
		}
	}
	// A run no row names any more leaves the header.
	doc = summarize(t, doc, strings.Replace(full, "2026-11-24T21:11:05Z", "2026-11-29T08:00:00Z", 1))
	if strings.Contains(doc, "2026-11-24 21:11 UTC") || strings.Contains(doc, "2026-11-28 10:20 UTC") {
		t.Errorf("runs that no row names are still listed:\n%s", doc)
	}
}

// TestTheTableMakeBenchWroteBeforeRunsWereNamed reads the six-column table
// and one-line header the summary wrote until 2026-11-28: its rows keep
// their figures, and name that run.
func TestTheTableMakeBenchWroteBeforeRunsWereNamed(t *testing.T) {
	old := "# Performance\n\n## Summary of the last `make bench`\n\n" + beginMarker + "\n" +
		"Written by `make bench` on 2026-11-24 21:11 UTC, commit cafb83c, go1.26.8, 2 cores; load average at the start 2.19 1.59 1.92; load average at the end 0.52 0.99 1.68. Every figure is the run's own.\n\n" +
		"| component | figure | target | measured | same-run baseline | verdict |\n|---|---|---|---|---|---|\n" +
		"| control plane | " + buildFull + " | ≤ 150 ms | 48.0 ms | rebuild, nothing changed: 8.3 ms | met |\n" +
		"| proxy | added p99 at half of peak load | ≤ 1 ms | 2.45 ms | tuned httputil.ReverseProxy: 1.47 ms | missed |\n" +
		endMarker + "\n\n## Admission\n"
	doc := summarize(t, old, `pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxySoak-2   1   0 goroutine-growth   0 fd-growth
`)
	if got, want := rowOf(t, doc, buildFull), (cells{"control plane", buildFull, "≤ 150 ms", "48.0 ms", "rebuild, nothing changed: 8.3 ms", "met", "2026-11-24 21:11 UTC, cafb83c"}); got != want {
		t.Errorf("kept row\n got %q\nwant %q", got, want)
	}
	if got := rowOf(t, doc, proxyFDs); got[3] != "+0" || got[6] != "2026-11-28 09:00 UTC, abc1234" {
		t.Errorf("refreshed row %q", got)
	}
	for _, want := range []string{
		"- 2026-11-24 21:11 UTC, cafb83c: `make bench`, go1.26.8, 2 cores; load average at the start 2.19 1.59 1.92, at the end 0.52 0.99 1.68\n",
		"- 2026-11-28 09:00 UTC, abc1234: `go test -bench (the input has no run lines)`",
		"load average at the start 1.00 1.00 1.00, at the end 2.00 2.00 2.00\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the header lacks\n%s\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "| added p99 at half of peak load | ≤ 1 ms |") {
		t.Errorf("a row no longer in rows is still in the table:\n%s", doc)
	}
}

func TestRunWritesTheDocumentFromSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	docPath := filepath.Join(dir, "performance.md")
	if err := os.WriteFile(docPath, []byte(summarize(t, emptyDoc, full)), 0o644); err != nil {
		t.Fatal(err)
	}
	var ins []string
	for i, cpu := range []string{"0.80", "0.85", "0.90"} {
		in := filepath.Join(dir, "proxyload-r"+string(rune('1'+i))+".txt")
		text := "# gatehouse-bench start: 2026-11-28T10:2" + string(rune('0'+i)) + ":00Z commit=7e69923 go=go1.26.9 cores=2 load=1.00/1.00/1.00\n" +
			"pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy\nBenchmarkProxyLoad-2   1   " + cpu + " bare-cpu-ratio-worst   100 bare-cpu-us/req\n"
		if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	if err := run(ins, docPath, ""); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowOf(t, string(raw), proxyCPU); got[3] != "0.85 × (median of 3 runs; 0.80 × to 0.90 ×)" || got[5] != "met" {
		t.Errorf("row from three files: %q", got)
	}
	if got := rowOf(t, string(raw), buildOne); got[3] != "8.3 ms" || got[6] != "2026-11-24 21:11 UTC, cafb83c" {
		t.Errorf("kept row: %q", got)
	}
}

func TestReadTableRefusesARowItCannotRead(t *testing.T) {
	doc := beginMarker + "\n| a | b | c |\n" + endMarker + "\n"
	if _, err := readTable(doc); err == nil {
		t.Error("a three-cell row was read")
	}
}

// TestMakeBenchWritesTheRunLinesTheSummaryReads holds the Makefile's bench
// target to the run lines readRuns reads, and to its two knobs.
func TestMakeBenchWritesTheRunLinesTheSummaryReads(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := string(raw)
	for _, want := range []string{
		`echo "` + startPrefix + `$$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=`, " go=", " cores=", " load=$$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)",
		`echo "` + commandPrefix + `make bench`,
		`echo "` + endPrefix + `$$(date -u +%Y-%m-%dT%H:%M:%SZ) load=`,
		"-bench '$(BENCH_RUN)'", "$(BENCH_PKGS) | tee -a bin/bench.txt",
		"BENCH_PKGS ?= ./...", "BENCH_RUN  ?= .",
		"go run ./test/bench/summary -in bin/bench.txt",
	} {
		if !strings.Contains(strings.ReplaceAll(mk, "$(GO)", "go"), want) {
			t.Errorf("the Makefile's bench target lacks %q", want)
		}
	}
}
