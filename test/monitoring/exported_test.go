package monitoring_test

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	agentclient "github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/proxy/proxycli"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// recorder is a Registerer that keeps what is registered with it, so the
// test can ask each collector what it describes: a vector with no series
// yet describes itself, where gathering a registry would leave it out.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// family is what a metric name stands for in a query: histograms answer to
// _bucket, _sum and _count.
type family struct {
	component string
	histogram bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exported returns every metric family the components register, built
// with the constructors their commands call, by name.
func exported(t *testing.T) map[string]family {
	t.Helper()
	out := map[string]family{}
	add := func(component string, r *recorder) {
		for _, c := range r.collectors {
			_, histVec := c.(*prometheus.HistogramVec)
			_, hist := c.(prometheus.Histogram)
			descs := make(chan *prometheus.Desc, 64)
			go func() { c.Describe(descs); close(descs) }()
			for d := range descs {
				m := fqName.FindStringSubmatch(d.String())
				if m == nil {
					t.Fatalf("%s: cannot read a name from %s", component, d)
				}
				out[m[1]] = family{component: component, histogram: hist || histVec}
			}
		}
	}
	quiet := slog.New(slog.DiscardHandler)

	// gatehouse controller: webhook, control plane (and its directory
	// source), the PolicyBundle reconciler and status, the agent server;
	// controller-runtime's registry has the process and Go collectors.
	ctrl := &recorder{}
	ctrl.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if _, err := webhook.NewMetrics(ctrl); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := testkit.WriteServingFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := server.New(server.Options{Authenticator: authn.NewStaticTokens(nil), CertFile: files.CertFile, KeyFile: files.KeyFile,
		Logger: quiet, Registerer: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	store := controlplane.NewStore()
	if _, err := controlplane.NewController(controlplane.ControllerOptions{Store: store, Builder: controlplane.NewBuilder(controlplane.BuilderOptions{}),
		Publisher: agents, Logger: quiet, Registerer: ctrl}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.NewBundleReconciler(kube.BundleReconcilerOptions{Logger: quiet, Registerer: ctrl}); err != nil {
		t.Fatal(err)
	}
	ctrl.MustRegister(kube.NewBundleStatusCollector(nil, "argocd"))
	if _, err := yamldir.NewSource(yamldir.SourceOptions{Dir: dir, Store: store, Logger: quiet, Registerer: ctrl}); err != nil {
		t.Fatal(err)
	}
	add("controller", ctrl)

	// gatehouse-agent, as agentcli.Run registers it.
	agent := &recorder{}
	agent.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if _, err := agentclient.NewMetrics(agent); err != nil {
		t.Fatal(err)
	}
	add("agent", agent)

	// gatehouse-proxy, as proxycli.Run registers it (the policy engine's
	// collector included).
	px := &recorder{}
	px.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if _, err := proxy.New(proxy.Options{Root: t.TempDir(), Logger: quiet, Registerer: px}); err != nil {
		t.Fatal(err)
	}
	px.MustRegister(proxycli.CertificateExpiry(func() float64 { return 0 })) // with --tls-cert-file
	add("proxy", px)
	return out
}

// lookup finds the family a name in a query belongs to.
func lookup(fams map[string]family, name string) (family, bool) {
	if f, ok := fams[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.histogram {
				return f, true
			}
		}
	}
	return family{}, false
}

// TestExportedMetricsAreNamedByTheConvention: gatehouse_<component>_<thing>_<unit>,
// counters ending in _total.
func TestExportedMetricsAreNamedByTheConvention(t *testing.T) {
	name := regexp.MustCompile(`^gatehouse_(webhook|controlplane|agentserver|agent|proxy|policy)_[a-z0-9_]+$`)
	for n := range exported(t) {
		if strings.HasPrefix(n, "gatehouse_") && !name.MatchString(n) {
			t.Errorf("metric %s is not named gatehouse_<component>_<thing>", n)
		}
	}
}
