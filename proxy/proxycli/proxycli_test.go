package proxycli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

func defaults(t *testing.T) *Options {
	o := &Options{}
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestNewOptions: NewOptions holds every flag's default, as the command
// parses them with no flag given.
func TestNewOptions(t *testing.T) {
	if got, want := fmt.Sprintf("%+v", *NewOptions()), fmt.Sprintf("%+v", *defaults(t)); got != want {
		t.Fatalf("NewOptions\n%s\nflag defaults\n%s", got, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"defaults", func(*Options) {}, ""},
		{"admin off loopback", func(o *Options) { o.AdminListen = ":9901" }, "must stay on loopback"},
		{"admin on another host", func(o *Options) { o.AdminListen = "10.0.0.1:9901" }, "must stay on loopback"},
		{"admin on IPv6 loopback", func(o *Options) { o.AdminListen = "[::1]:9901" }, ""},
		{"listen without a port", func(o *Options) { o.Listen = "8080" }, "--listen"},
		{"health off", func(o *Options) { o.HealthListen = "0" }, ""},
		{"certificate without key", func(o *Options) { o.CertFile = "tls.crt" }, "go together"},
		{"no volume", func(o *Options) { o.SnapshotDir = "" }, "--snapshot-dir"},
		{"bad log level", func(o *Options) { o.Log.Level = "loud" }, "--log-level"},
		{"no drain time", func(o *Options) { o.ShutdownTimeout = 0 }, "--shutdown-timeout"},
		{"a memory limit that is no size", func(o *Options) { o.Memory.MemoryLimit = "80MB" }, "--memory-limit"},
		{"no memory limit", func(o *Options) { o.Memory.MemoryLimit = "0" }, ""},
		{"no collector growth", func(o *Options) { o.Memory.GCPercent = 0 }, "--gc-percent"},
		{"Argo CD's CA without its URL", func(o *Options) { o.ArgoCD.CAFile = "ca.crt" }, "--argocd-server-ca-file needs --argocd-server-url"},
		{"a cache TTL that outlasts logout", func(o *Options) { o.ArgoCD.URL, o.ArgoCD.CacheTTL = "https://argocd-server", time.Hour }, "--argocd-server-cache-ttl"},
		{"tracing to a collector", func(o *Options) { o.Tracing.Endpoint = "otel-collector.monitoring:4317" }, ""},
		{"a collector URL", func(o *Options) { o.Tracing.Endpoint = "http://otel:4318" }, "--otlp-endpoint \"http://otel:4318\": give host:port without a scheme"},
		{"plaintext without a collector", func(o *Options) { o.Tracing.Insecure = true }, "--otlp-insecure needs --otlp-endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaults(t)
			tt.edit(o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("errors %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("errors %v, want one about %q", err, tt.want)
			}
		})
	}
}

// TestValidateReportsEveryFault: Validate names every fault at once, one
// line each, rather than the first.
func TestValidateReportsEveryFault(t *testing.T) {
	o := defaults(t)
	o.SnapshotDir, o.Listen, o.AdminListen, o.KeyFile = "", "8080", ":9901", "tls.key"
	o.ShutdownTimeout, o.ArgoCD.Timeout, o.Memory.GCPercent = 0, 0, 0
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		"--snapshot-dir must name the shared volume",
		`--listen "8080": want host:port (":8080" for every address)`,
		`--admin-listen ":9901": the admin endpoint must stay on loopback (127.0.0.1 or [::1]); its state is for the agent beside the proxy`,
		"--tls-cert-file and --tls-key-file go together",
		"--shutdown-timeout must be positive",
		"--argocd-server-timeout must be positive",
		"--gc-percent must be positive",
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Fatalf("faults\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunServesTheVolumeAndDrains runs the command's wiring on real ports:
// it serves the snapshot the volume holds, reports each new version on the
// admin endpoint, and on shutdown lets a request in flight finish before
// Run returns.
func TestRunServesTheVolumeAndDrains(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "backend answered")
	}))
	defer backend.Close()
	secret := []byte("key")
	content := func(rev string) *snapshot.Content {
		return &snapshot.Content{
			Extensions: []snapshot.Extension{{Name: "audit", System: true, Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{backend.URL}}}}}},
			Auth: snapshot.Auth{LocalSecretKey: &snapshot.SecretRef{Path: "argocd-secret/server.secretkey"},
				Accounts: []snapshot.Account{{Name: "alice", Enabled: true, Capabilities: []string{"login"}}}},
			Policy: map[string][]byte{"p/policy.rego": policies.DefaultPolicy(),
				"data.json": []byte(`{"gatehouse": {"bindings": {"users": {"alice": ["r"]}}, "roles": {"r": {"extensions": [{"extension": "audit"}]}}}}`),
				".manifest": []byte(`{"revision": "` + rev + `"}`)},
			Secrets: map[string][]byte{"argocd-secret/server.secretkey": secret},
		}
	}
	root := filepath.Join(t.TempDir(), "volume")
	w, err := sidecar.NewWriter(root, sidecar.DefaultLimits(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := testkit.WriteSnapshot(w, content("one"))
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = testkit.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	// Traced, over TLS, to a real collector: the last request's span must
	// be exported by the time Run returns.
	rcv := otlptest.Start(t, false)
	o := defaults(t)
	o.Tracing.Endpoint, o.Tracing.CAFile = rcv.Addr, rcv.CAFile
	o.SnapshotDir = root
	o.Listen, o.AdminListen, o.HealthListen = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, slog.New(slog.DiscardHandler)) }()

	stateURL := "http://" + o.AdminListen + proxy.StatePath
	waitState := func(version string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get(stateURL)
			if err != nil {
				continue
			}
			var s sidecar.ProxyState
			_ = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
			if s.ServedVersion == version {
				return
			}
		}
		t.Fatalf("the admin endpoint never reported %s served", version)
	}
	waitState(v1)
	if err := testkit.WaitHTTP("http://"+o.HealthListen+"/readyz", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	v2, err := testkit.WriteSnapshot(w, content("two"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(v2)

	get := func(path string) (int, string, error) {
		r, _ := http.NewRequest(http.MethodGet, "http://"+o.Listen+"/api/v1/extensions/audit"+path, nil)
		r.Header.Set("Authorization", "Bearer "+testkit.ArgoCDToken(secret, "alice:login", time.Now(), time.Hour, nil))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	if code, body, err := get("/fast"); err != nil || code != 200 || body != "backend answered" {
		t.Fatalf("request: %d %q %v", code, body, err)
	}
	slow := make(chan string, 1)
	go func() {
		code, body, err := get("/slow")
		slow <- fmt.Sprint(code, " ", body, " ", err)
	}()
	<-arrived
	cancel() // SIGTERM
	// The draining proxy stops being ready while the request is in flight.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + o.HealthListen + "/readyz")
		if err != nil || resp.StatusCode == http.StatusServiceUnavailable {
			if resp != nil {
				resp.Body.Close()
			}
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still ready after shutdown began")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	if got := <-slow; got != "200 backend answered <nil>" {
		t.Fatalf("the request in flight got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v, want a clean exit", err)
	}
	var slowSpan bool
	for _, sp := range rcv.Spans() {
		slowSpan = slowSpan || sp.Name == "extension request" && sp.Resource["service.name"] == "gatehouse-proxy" &&
			sp.Attr("gatehouse.extension") == "audit" && sp.Attr("http.response.status_code") == "200" && sp.EndTimeUnixNano > 0
	}
	if !slowSpan {
		t.Errorf("Run returned without exporting the last request's span; received %d spans", len(rcv.Spans()))
	}
}
