package proxybench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

var (
	tailRate     = flag.Float64("proxybench.tail-rate", 10000, "requests per second of BenchmarkProxyTail's paced runs")
	tailVariants = flag.String("proxybench.tail-variants", "",
		"Gatehouse variants BenchmarkProxyTail compares, separated by '|': each a space-separated list of NAME=value environment variables, "+
			"--flags, apps=N (Applications in the snapshot) and bin=PATH (another gatehouse-proxy binary, e.g. one built from the commit before)")
)

// BenchmarkProxyTail compares the p99 that the bare Go proxy and variants
// of Gatehouse (-proxybench.tail-variants) add to the backend's at one
// paced rate (-proxybench.tail-rate), round after round in turn, so that
// the machine's noise falls on all of them alike. It is for finding what
// costs the proxy tail latency, so it runs only when given variants;
// BenchmarkProxyLoad measures the targets. Each variant's output goes to
// $TMPDIR/tail-N.log and its allocation profile to tail-N.allocs (the bare
// proxy's to tail-bare.log; PROXYBENCH_BARE_ENV sets its environment, e.g.
// GODEBUG=gctrace=1).
func BenchmarkProxyTail(b *testing.B) {
	if *tailVariants == "" {
		b.Skip("a diagnostic: give -proxybench.tail-variants (docs/performance.md, issue 14)")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	for range b.N {
		runTail(b)
	}
	b.ReportMetric(0, "ns/op")
}

func runTail(b *testing.B) {
	gh, bare, err := build()
	if err != nil {
		b.Fatal(err)
	}
	be := startBackend(b)
	toks := tokens()
	dir := tmpfs(b)
	bp := startBare(b, bare, be.url, strings.Fields(os.Getenv("PROXYBENCH_BARE_ENV")))
	b.Cleanup(func() { _ = os.WriteFile(os.TempDir()+"/tail-bare.log", []byte(bp.logs.String()), 0o600) })
	targets := []target{{name: "backend direct", url: be.url}, {name: "bare Go proxy", url: bp.url, pid: bp.pid()}}
	variants := strings.Split(*tailVariants, "|")
	for _, v := range variants {
		var env, args []string
		apps := applications
		cmdline := gh
		for _, f := range strings.Fields(v) {
			if bin, ok := strings.CutPrefix(f, "bin="); ok {
				cmdline = []string{bin}
			} else if n, ok := strings.CutPrefix(f, "apps="); ok {
				if apps, err = strconv.Atoi(n); err != nil {
					b.Fatalf("variant %q: %v", v, err)
				}
			} else if f != "" && unicode.IsUpper(rune(f[0])) && strings.Contains(f, "=") {
				env = append(env, f)
			} else {
				args = append(args, f)
			}
		}
		g := startGatehouseWith(b, cmdline, tmpfs(b), contentOf(be.url, 0, apps), env, args)
		name := strings.TrimSpace(v)
		if name == "" {
			name = "default"
		}
		targets = append(targets, target{name: "gatehouse " + name, url: g.url, pid: g.pid()})
		logFile := fmt.Sprintf("%s/tail-%d.log", os.TempDir(), len(targets)-2)
		b.Cleanup(func() {
			_ = os.WriteFile(logFile, []byte(g.logs.String()), 0o600)
			if resp, err := http.Get(g.admin + "/debug/pprof/allocs"); err == nil {
				data, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				_ = os.WriteFile(strings.TrimSuffix(logFile, ".log")+".allocs", data, 0o600)
			}
		})
	}
	script, err := wrkScript(dir, toks)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range targets {
		if _, out, err := runWrk(t.url, script, *connections, 2*time.Second); err != nil {
			b.Fatalf("%s: %v\n%s", t.name, err, out)
		}
	}
	added := make([][]float64, len(targets))
	cpu := make([][]float64, len(targets))
	got := make([][]float64, len(targets))
	for range *rounds {
		runs := halfPeak(b, dir, targets, toks, *tailRate)
		for i, r := range runs {
			added[i] = append(added[i], ms(r.p99-runs[0].p99))
			cpu[i] = append(cpu[i], r.cpuPerReq)
			got[i] = append(got[i], r.rps)
		}
	}
	fmt.Printf("\n%d rounds at %.0f requests/s asked, %d connections, %s each; the p99 each adds to the backend's (ms, min / median / max), CPU per request (µs), requests/s got\n",
		*rounds, *tailRate, *connections, *duration)
	for i, t := range targets[1:] {
		_, hwm, _ := testkit.MemOf(strconv.Itoa(t.pid))
		fmt.Printf("  %s +%s  cpu %s  got %s/s  peak RSS %.0f MB\n", pad(t.name, 60), fmtStats(added[i+1], "%.2f"), fmtStats(cpu[i+1], "%.1f"), fmtStats(got[i+1], "%.0f"), mb(hwm))
	}
}
