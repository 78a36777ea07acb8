package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testFallback describes input without run lines.
var testFallback = fallback{now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), commit: "abc1234", loadStart: "1.00 1.00 1.00", loadEnd: "2.00 2.00 2.00"}

const sample = `goos: linux
pkg: github.com/gatehouse-dev/gatehouse/controlplane
BenchmarkBuild/full-2         	      20	  65000000 ns/op	31800000 B/op
BenchmarkBuild/no-change-2    	      20	  13000000 ns/op
pkg: github.com/gatehouse-dev/gatehouse/test/e2e
BenchmarkFullStackSoak
    soak_test.go:94: BenchmarkFullStackSoak-2 is printed before its log lines too
BenchmarkFullStackSoak-2   	       1	         0 failed-requests	    240000 requests	 2 proxy-goroutine-growth	 41 proxy-goroutines-start
--- FAIL: BenchmarkOther
pkg: github.com/gatehouse-dev/gatehouse/test/bench/proxy
BenchmarkProxyLoad-2   	       1	         0.98 bare-cpu-ratio-worst	        37.20 bare-cpu-us/req
--- FAIL: BenchmarkProxySoak
`

func TestParseReadsEveryMetricByPackage(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, unit string
		want      float64
	}{
		{"controlplane:BenchmarkBuild/full", "ns/op", 65e6},
		{"controlplane:BenchmarkBuild/full", "B/op", 31.8e6},
		{"controlplane:BenchmarkBuild/no-change", "ns/op", 13e6},
		{"test/e2e:BenchmarkFullStackSoak", "requests", 240000},
		{"test/e2e:BenchmarkFullStackSoak", "proxy-goroutine-growth", 2},
	} {
		if got, ok := r[tc.key][tc.unit]; !ok || got != tc.want {
			t.Errorf("%s %s = %v (%v), want %v", tc.key, tc.unit, got, ok, tc.want)
		}
	}
}

func TestTableGivesVerdictsAndBaselines(t *testing.T) {
	runs, err := readRuns(strings.NewReader(sample), testFallback)
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := summary(runs, docTable{})
	for _, want := range []string{
		"| control plane | full snapshot build (10,000 Applications, policy compiled) | ≤ 150 ms | 65.0 ms | rebuild, nothing changed: 13.0 ms | met | 2026-11-28 09:00 UTC, abc1234 |",
		"| control plane | new version after one Application changed | ≤ 20 ms | not measured yet | rebuild, nothing changed: not measured yet | — | — |",
		"| full stack, 10 min soak | failed extension requests (steady load on both proxies) | 0 | 0 | requests sent: 240000 | met | 2026-11-28 09:00 UTC, abc1234 |",
		"| full stack, 10 min soak | goroutine growth, proxies (worst) | flat (≤ +2) | +2 | goroutines after the first minute: 41 | met | 2026-11-28 09:00 UTC, abc1234 |",
		"| proxy | goroutine growth after 1,000,000 requests, outside the backend connection pool | flat (≤ +2) | benchmark failed | — | missed | 2026-11-28 09:00 UTC, abc1234 |",
		"| proxy | CPU per request, everything on (authn, Rego, limits), over the tuned Go proxy's, worst of min / median / max | ≤ 1.00 × tuned httputil.ReverseProxy | 0.98 × | tuned httputil.ReverseProxy, median: 37.2 µs | met | 2026-11-28 09:00 UTC, abc1234 |",
	} {
		if !strings.Contains(tbl, want) {
			t.Errorf("the table lacks\n%s\n%s", want, tbl)
		}
	}
}

func TestSpliceReplacesThePreviousSummary(t *testing.T) {
	doc := []byte("# Performance\n\nIntro.\n\n## Admission\n\nText.\n")
	first, err := splice(doc, beginMarker+"\nold\n"+endMarker+"\n")
	if err != nil {
		t.Fatal(err)
	}
	second, err := splice(first, beginMarker+"\nnew\n"+endMarker+"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Performance\n\nIntro.\n\n## Summary of `make bench`\n\n" + beginMarker + "\nnew\n" + endMarker + "\n\n## Admission\n\nText.\n"
	if string(second) != want {
		t.Errorf("got\n%s\nwant\n%s", second, want)
	}
}

// TestRowsNameBenchmarksThatExist holds the table to the benchmarks: a
// benchmark renamed or moved would otherwise only show as "not run" in the
// next make bench.
func TestRowsNameBenchmarksThatExist(t *testing.T) {
	sources := map[string]string{}
	read := func(pkg string) string {
		if s, ok := sources[pkg]; ok {
			return s
		}
		files, err := filepath.Glob(filepath.Join("..", "..", "..", pkg, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s has no test files (%v)", pkg, err)
		}
		var b strings.Builder
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(raw)
		}
		sources[pkg] = b.String()
		return sources[pkg]
	}
	for _, row := range rows {
		for _, m := range []*metric{&row.measured, row.base} {
			if m == nil {
				continue
			}
			top, _, _ := strings.Cut(m.bench, "/")
			if !strings.Contains(read(m.pkg), "func "+top+"(b *testing.B)") {
				t.Errorf("%s: %s has no func %s(b *testing.B)", row.figure, m.pkg, top)
			}
		}
	}
}
