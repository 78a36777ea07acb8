package agentcli

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

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestAdminServesHTTPSWithACertificate: Prometheus reaches the agent's
// /metrics from another Pod, so with --admin-tls-cert-file the admin
// endpoint serves HTTPS (verified with the CA) and no plain HTTP. The
// control plane is unreachable: the endpoint serves regardless.
func TestAdminServesHTTPSWithACertificate(t *testing.T) {
	dir := t.TempDir()
	pki, err := testkit.WriteServingFiles(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{}
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--server", "127.0.0.1:1", "--root", filepath.Join(dir, "volume"),
		"--ca-file", pki.CAFile, "--token-file", filepath.Join(dir, "token"), "--agent-id", "a",
		"--admin-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--admin-tls-cert-file", pki.CertFile, "--admin-tls-key-file", pki.KeyFile}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, "test", slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v, want a clean exit", err)
		}
	}()
	verified := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.CA.Pool(), MinVersion: tls.VersionTLS12}}}
	base := fmt.Sprintf("127.0.0.1:%d", port)
	if err := testkit.WaitHTTPWith(verified, "https://"+base+"/healthz", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	status, body, err := testkit.Fetch(verified, "https://"+base+"/metrics")
	if err != nil || status != http.StatusOK || !strings.Contains(body, "gatehouse_agent_") {
		t.Fatalf("metrics over HTTPS: %d, %v, body without gatehouse_agent_", status, err)
	}
	if !strings.Contains(body, "gatehouse_build_info{") || !strings.Contains(body, `component="agent"`) {
		t.Fatalf("metrics without gatehouse_build_info{component=\"agent\",...}:\n%s", body)
	}
	status, body, err = testkit.Fetch(http.DefaultClient, "http://"+base+"/metrics")
	if err == nil && (status != http.StatusBadRequest || strings.Contains(body, "gatehouse_agent_")) {
		t.Fatalf("plain HTTP got %d %q, want a refusal", status, body)
	}
}
