package proxycli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestListenersServeTLSWithACertificate: with --tls-cert-file, the health
// listener (probes and /metrics, which other Pods reach) serves HTTPS with
// the same certificate as the extension listener and answers nothing in
// plain HTTP; the admin endpoint, on loopback for the agent, stays plain.
func TestListenersServeTLSWithACertificate(t *testing.T) {
	dir := t.TempDir()
	pki, err := testkit.WriteServingFiles(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = testkit.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	o := defaults(t)
	o.SnapshotDir = filepath.Join(dir, "volume")
	o.CertFile, o.KeyFile = pki.CertFile, pki.KeyFile
	o.Listen, o.AdminListen, o.HealthListen = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	verified := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.CA.Pool(), MinVersion: tls.VersionTLS12}}}
	if err := testkit.WaitHTTPWith(verified, "https://"+o.HealthListen+"/healthz", 10*time.Second); err != nil {
		t.Fatalf("the health listener never answered over HTTPS: %v", err)
	}
	for _, tc := range []struct {
		name, url string
		client    *http.Client
		want      string // in the body; "" for a refusal
	}{
		{"metrics over HTTPS, verified with the CA", "https://" + o.HealthListen + "/metrics", verified, "gatehouse_proxy_certificate_expiry_timestamp_seconds"},
		{"metrics name the build", "https://" + o.HealthListen + "/metrics", verified, `gatehouse_build_info{build_date=`},
		{"the build is the proxy's", "https://" + o.HealthListen + "/metrics", verified, `component="proxy"`},
		{"metrics in plain HTTP", "http://" + o.HealthListen + "/metrics", http.DefaultClient, ""},
		{"the extension listener in plain HTTP", "http://" + o.Listen + "/api/v1/extensions/x/", http.DefaultClient, ""},
		{"the admin endpoint stays plain on loopback", "http://" + o.AdminListen + "/healthz", http.DefaultClient, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, err := testkit.Fetch(tc.client, tc.url)
			if tc.want == "" {
				// Go's TLS server answers a plain request with a 400 and
				// nothing of the handler's.
				if err == nil && (status != http.StatusBadRequest || !strings.Contains(body, "HTTPS")) {
					t.Fatalf("plain HTTP got %d %q, want a refusal", status, body)
				}
				return
			}
			if err != nil || status != http.StatusOK || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d, %v, body without %q", status, err, tc.want)
			}
		})
	}
}
