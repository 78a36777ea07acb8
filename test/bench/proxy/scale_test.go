package proxybench

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// scaleProjects and scaleClusters are issue 27 §3's world around the
// Applications: 5,000 AppProjects and 1,000 clusters.
const (
	scaleProjects = 5000
	scaleClusters = 1000
)

// scaleContent is content with apps Applications, and 5,000 projects and
// 1,000 clusters (the Applications stay in the first 100 projects, as in
// content, so the requests are the same at every size).
func scaleContent(backendURL string, apps int) *snapshot.Content {
	c := contentOf(backendURL, 0, apps)
	for p := len(c.Projects); p < scaleProjects; p++ {
		name := fmt.Sprintf("team-%d", p)
		c.Projects = append(c.Projects, snapshot.Project{Name: name, SourceNamespaces: []string{name},
			Destinations: []snapshot.Destination{{Server: "*", Namespace: name + "-*"}, {Name: fmt.Sprintf("cluster-%d", p%scaleClusters), Namespace: "*"}}})
	}
	for i := len(c.Clusters); i < scaleClusters; i++ {
		c.Clusters = append(c.Clusters, snapshot.Cluster{Name: fmt.Sprintf("cluster-%d", i), Server: fmt.Sprintf("https://cluster-%d.example.com:6443", i)})
	}
	return c
}

// BenchmarkProxyScaleMemory is issue 27 §3's proxy figure: the RSS of the
// proxy image's gatehouse-proxy with a snapshot of 1,000, 10,000, 50,000
// and 100,000 Applications (5,000 projects, 1,000 clusters) loaded: once
// serving it, and after a 5 s wrk run of a thousand users (so the request
// path's buffers and caches are in). Target at 100,000: ≤ 250 MB peak.
// Each size is a new process; the 100,000 snapshot is about 20 MB on
// /dev/shm. Run with -benchtime 1x -count 3 for three rounds.
func BenchmarkProxyScaleMemory(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	if _, _, err := build(); err != nil {
		b.Fatal(err)
	}
	be := startBackend(b)
	var s strings.Builder
	fmt.Fprintf(&s, "\ngatehouse-proxy RSS by snapshot size (%d projects, %d clusters); load average %.2f\n", scaleProjects, scaleClusters, testkit.LoadAvg())
	for _, apps := range []int{1000, 10000, 50000, 100000} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			for range b.N {
				dir := tmpfs(b)
				script, err := wrkScript(dir, tokens())
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				g := startGatehouse(b, []string{binDir + "/gatehouse-proxy"}, dir, scaleContent(be.url, apps))
				loaded := time.Since(start)
				time.Sleep(2 * time.Second) // the loading's garbage collected, as in steady state
				idle, _, _ := testkit.MemOf(strconv.Itoa(g.pid()))
				res, out, err := runWrk(g.url, script, *connections, 5*time.Second)
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				busy, hwm, _ := testkit.MemOf(strconv.Itoa(g.pid()))
				g.stop()
				fmt.Fprintf(&s, "apps=%-6d idle %.1f MB, after load %.1f MB, peak %.1f MB (written and served in %s; %.0f requests/s, %d non-2xx)\n",
					apps, mb(idle), mb(busy), mb(hwm), loaded.Round(time.Millisecond), res.rps(), res.non2xx+res.errors)
				b.ReportMetric(mb(idle), "idle-rss-MB")
				b.ReportMetric(mb(busy), "rss-after-load-MB")
				b.ReportMetric(mb(hwm), "peak-rss-MB")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
	fmt.Print(s.String())
}
