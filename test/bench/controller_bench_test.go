package bench

import (
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// controllerFigures is what BenchmarkController measured of the real binary.
type controllerFigures struct {
	ready            time.Duration // start to /readyz 200
	syncRSS, syncHWM int64
	loadRSS, loadHWM int64
	cpu              map[string]time.Duration // per review, by review kind
	reviews          int                      // per review kind
	// status-only Application updates at statusRate per second for statusWindow
	statusIdleCPU, statusCPU time.Duration
	statusSent               int
	statusRSS                int64
}

const (
	statusRate   = 100
	statusWindow = 30 * time.Second
)

var (
	controllerOnce sync.Once
	controllerRes  *controllerFigures
	controllerErr  error
)

// BenchmarkController cross-checks the in-process server against the
// shipped binary: it builds cmd/gatehouse, runs `gatehouse controller`
// against the same cluster (external certificates, no metrics listener),
// and reports its RSS once ready and after 4,000 reviews of each kind at 16
// connections, and its CPU time per review (from /proc, 10 ms resolution).
// The figures do not depend on b.N; they are measured once per process.
func BenchmarkController(b *testing.B) {
	controllerOnce.Do(func() {
		c, err := getCluster()
		if err != nil {
			controllerErr = err
			return
		}
		controllerRes, controllerErr = runController(c)
	})
	if controllerErr != nil {
		b.Fatal(controllerErr)
	}
	r := controllerRes
	b.ReportMetric(r.ready.Seconds(), "ready-s")
	b.ReportMetric(mb(r.syncRSS), "rss-MB")
	b.ReportMetric(mb(r.loadRSS), "rss-after-load-MB")
	b.ReportMetric(mb(r.loadHWM), "peak-rss-MB")
	for _, k := range reviewKinds {
		b.ReportMetric(us(r.cpu[k.name]), k.name+"-cpu-us/review")
	}
	b.ReportMetric(100*r.statusIdleCPU.Seconds()/statusWindow.Seconds(), "idle-cpu-%")
	b.ReportMetric(100*r.statusCPU.Seconds()/statusWindow.Seconds(), "status-100/s-cpu-%")
	b.ReportMetric(float64(r.statusSent)/statusWindow.Seconds(), "status-updates/s")
	b.ReportMetric(mb(r.statusRSS), "rss-after-status-MB")
	b.ReportMetric(0, "ns/op")
}

// controllerProfile, when set, is where the controller's CPU profile of the
// status-only window is written (the controller runs with --profiling).
var controllerProfile = flag.String("controllerbench.status-cpuprofile", "", "write the controller's CPU profile during the status-only updates to this file")

func runController(c *cluster) (*controllerFigures, error) {
	bin := filepath.Join(c.dir, "gatehouse")
	build := exec.Command("go", "build", "-o", bin, "github.com/gatehouse-dev/gatehouse/cmd/gatehouse")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build gatehouse: %w\n%s", err, out)
	}
	p, err := startController(c, bin, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	fail := func(err error) (*controllerFigures, error) { return nil, p.failed(err) }
	r := &controllerFigures{ready: p.ready, cpu: map[string]time.Duration{}, reviews: 4000}
	if err := p.collect(); err != nil {
		return fail(err)
	}
	pid := strconv.Itoa(p.pid())
	if r.syncRSS, r.syncHWM, err = testkit.MemOf(pid); err != nil {
		return fail(err)
	}
	cl := newLoadClient(fmt.Sprintf("https://127.0.0.1:%d", p.port), c.caPool, 16)
	defer cl.close()
	for _, k := range reviewKinds {
		cost, err := p.measureReviews(cl, k, r.reviews)
		if err != nil {
			return fail(err)
		}
		r.cpu[k.name] = cost.cpu
	}
	if r.loadRSS, r.loadHWM, err = testkit.MemOf(pid); err != nil {
		return fail(err)
	}
	profiled := make(chan error, 1)
	if *controllerProfile != "" {
		go func() {
			time.Sleep(statusWindow) // the idle window comes first
			profiled <- fetchProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", p.profilePort, int(statusWindow.Seconds())), *controllerProfile)
		}()
	} else {
		profiled <- nil
	}
	if r.statusIdleCPU, r.statusCPU, r.statusSent, err = statusLoad(c, p.pid(), statusRate, statusWindow); err != nil {
		return fail(err)
	}
	if err := <-profiled; err != nil {
		return fail(err)
	}
	if r.statusRSS, _, err = testkit.MemOf(pid); err != nil {
		return fail(err)
	}
	return r, nil
}
