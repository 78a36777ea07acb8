package bench

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// scaleProfileDir, when set, gets a CPU profile of the controller under each
// review kind, after the measured reviews, for every step and round.
var scaleProfileDir = flag.String("scalebench.cpuprofile-dir", "", "write the controller's CPU profile under each review kind to this directory")

// Issue 27 §3's population: 1,000 AppProjects (as in the admission
// benchmark), 1,000 cluster Secrets, and Applications grown in steps to
// 100,000.
var scaleSteps = []int{1000, 10000, 50000, 100000}

const (
	scaleClusters = 1000
	scaleStarts   = 3    // controller processes per step: the rounds
	scaleReviews  = 2000 // per review kind and round
	scaleWorkers  = 16   // concurrent creates
)

// scaleApp is the k-th Application of the scale population: project k%1000,
// like the admission benchmark's Applications (with last-applied, kubectl's
// managedFields and a full status), 100 per project at 100,000.
func scaleApp(k int) map[string]any {
	i, rest := k%numProjects, k/numProjects
	j := rest % appsPerProject
	app := withLastApplied(applicationManifest(i, j, fmt.Sprintf("%s-%d", appName(i, j), rest/appsPerProject)))
	app["status"] = applicationStatus(i, j, 40)
	return app
}

func seedScale(ctx context.Context, cl client.Client) error {
	if err := seedSettings(ctx, cl); err != nil {
		return err
	}
	var objs []map[string]any
	for i := range numProjects {
		p := projectManifest(i)
		if ann := p["metadata"].(map[string]any)["annotations"].(map[string]any); ann["gatehouse.io/max-applications"] != nil {
			// 100 Applications per project at 100,000: a quota of 100 would
			// deny the CREATE reviews of the load.
			ann["gatehouse.io/max-applications"] = "1000"
		}
		objs = append(objs, withLastApplied(p))
	}
	if err := createAll(ctx, cl, objs, scaleWorkers); err != nil {
		return err
	}
	for i := numClusters; i < scaleClusters; i++ {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%04d", i), Namespace: controlPlane,
				Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": fmt.Sprintf("cluster-%04d", i), "server": fmt.Sprintf("https://cluster-%04d.example.com:6443", i),
				"config": `{"bearerToken":"` + strings.Repeat("t", 900) + `"}`},
		}
		if err := cl.Create(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// scaleFigures is one controller process at one step.
type scaleFigures struct {
	ready    time.Duration
	rss, hwm int64
	cost     map[string]reviewCost // by review kind
}

// BenchmarkControllerScale runs `gatehouse controller` (webhook, agent
// server, control plane, as shipped) against a real kube-apiserver and etcd
// holding 1,000, 10,000, 50,000 and 100,000 Applications, three processes
// per step, and reports per step: the time to ready (caches synced, first
// snapshot built), RSS 2 s after ready, and the server's CPU per review of
// each kind (scaleReviews each, 16 connections, /proc). Issue 27 §3's
// targets: RSS ≤ 600 MB at 100,000; CPU per review at 100,000 within 1.2×
// that at 1,000. The Applications are created between steps, scaleWorkers
// at a time; the whole benchmark takes 10-15 minutes and about 6 GB
// (etcd and the API server's watch cache hold 100,000 9 KB objects).
// The figures do not depend on b.N; they are measured once per process.
func BenchmarkControllerScale(b *testing.B) {
	c, err := startClusterWith(seedScale)
	if c != nil {
		defer c.stop()
	}
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(c.dir, "gatehouse")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gatehouse-dev/gatehouse/cmd/gatehouse").CombinedOutput(); err != nil {
		b.Fatalf("go build gatehouse: %v\n%s", err, out)
	}
	ctx := context.Background()
	have := 0
	var s strings.Builder
	fmt.Fprintf(&s, "\ncontroller at scale: %d AppProjects, %d clusters; load average %.2f at the start\n", numProjects, scaleClusters, testkit.LoadAvg())
	base := map[string][]float64{}
	for _, n := range scaleSteps {
		start := time.Now()
		objs := make([]map[string]any, 0, n-have)
		for k := have; k < n; k++ {
			objs = append(objs, scaleApp(k))
		}
		if err := createAll(ctx, c.client, objs, scaleWorkers); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&s, "apps=%d: %d created in %s (%d at a time)\n", n, n-have, time.Since(start).Round(time.Second), scaleWorkers)
		have = n
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			var rss, ready []float64
			cpu, gcCPU, gcs := map[string][]float64{}, map[string][]float64{}, map[string][]string{}
			for round := range scaleStarts {
				f, err := measureController(c, bin, fmt.Sprintf("apps=%d", n), round)
				if err != nil {
					b.Fatal(err)
				}
				rss, ready = append(rss, mb(f.rss)), append(ready, f.ready.Seconds())
				for k, v := range f.cost {
					cpu[k] = append(cpu[k], us(v.cpu))
					gcCPU[k] = append(gcCPU[k], us(v.gcCPU))
					gcs[k] = append(gcs[k], fmt.Sprintf("%d@%dMB", v.gcs, v.heapMB))
				}
			}
			b.ReportMetric(median(rss), "rss-MB")
			b.ReportMetric(median(ready), "ready-s")
			fmt.Fprintf(&s, "apps=%d: RSS %s MB, ready in %s s", n, spread(rss, "%.0f"), spread(ready, "%.1f"))
			worst := 0.0
			for _, k := range reviewKinds {
				b.ReportMetric(median(cpu[k.name]), k.name+"-cpu-us/review")
				if base[k.name] == nil {
					base[k.name] = cpu[k.name]
				}
				ratio := median(cpu[k.name]) / median(base[k.name])
				b.ReportMetric(ratio, k.name+"-cpu-x-1k")
				worst = max(worst, ratio)
				fmt.Fprintf(&s, "; %s %s µs/review (%.2f× 1k; collector %s µs/review, collections by round %s)",
					k.name, spread(cpu[k.name], "%.0f"), ratio, spread(gcCPU[k.name], "%.0f"), strings.Join(gcs[k.name], " "))
			}
			b.ReportMetric(worst, "worst-cpu-x-1k")
			fmt.Fprintf(&s, "; load average %.2f\n", testkit.LoadAvg())
			b.ReportMetric(0, "ns/op")
		})
	}
	fmt.Print(s.String())
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

// spread is min/median/max.
func spread(v []float64, format string) string {
	s := slices.Sorted(slices.Values(v))
	return fmt.Sprintf(format+"/"+format+"/"+format, s[0], s[len(s)/2], s[len(s)-1])
}

// measureController starts `gatehouse controller`, waits until ready,
// takes its RSS and CPU per review, and stops it. The kinds are measured in
// an order rotated by round, so that no kind is always the first after the
// start: whatever the process still does then is spread over all of them.
func measureController(c *cluster, bin, label string, round int) (*scaleFigures, error) {
	p, err := startController(c, bin, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	f := &scaleFigures{ready: p.ready, cost: map[string]reviewCost{}}
	if err := p.collect(); err != nil {
		return nil, p.failed(err)
	}
	if f.rss, f.hwm, err = testkit.MemOf(strconv.Itoa(p.pid())); err != nil {
		return nil, p.failed(err)
	}
	cl := newLoadClient(fmt.Sprintf("https://127.0.0.1:%d", p.port), c.caPool, 16)
	defer cl.close()
	for i := range reviewKinds {
		k := reviewKinds[(i+round)%len(reviewKinds)]
		if f.cost[k.name], err = p.measureReviews(cl, k, scaleReviews); err != nil {
			return nil, p.failed(err)
		}
	}
	if *scaleProfileDir != "" {
		for _, k := range reviewKinds {
			file := filepath.Join(*scaleProfileDir, fmt.Sprintf("%s-round%d-%s.pprof", label, round, k.name))
			if err := p.profileReviews(cl, k, file); err != nil {
				return nil, p.failed(err)
			}
		}
	}
	return f, nil
}
