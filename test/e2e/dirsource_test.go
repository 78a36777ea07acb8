package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestDirSourceToAgent runs the whole configuration path with no cluster:
// `gatehouse controller --source dir:PATH` builds the snapshot from YAML, a
// real `gatehouse agent` downloads it over gRPC/TLS onto a volume, and the
// proxy's loader (sidecar + snapshot) reads it back. Edits to the
// YAML reach the volume; a broken extension config does not.
func TestDirSourceToAgent(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "cluster")
	copyTree(t, "../../controlplane/testdata/cluster", src)
	pki, err := testkit.WriteServingFiles(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	tokens, tokenFile := filepath.Join(dir, "tokens"), filepath.Join(dir, "token")
	writeFile(t, tokens, "dev-token agent-dev-1\n")
	writeFile(t, tokenFile, "dev-token")
	ports := freePorts(t, 5)
	agentAddr, admin, probes, agentAdmin := "127.0.0.1:"+itoa(ports[0]), "https://127.0.0.1:"+itoa(ports[1]), "http://127.0.0.1:"+itoa(ports[2]), "127.0.0.1:"+itoa(ports[3])
	debug := "http://127.0.0.1:" + itoa(ports[4])
	var ctrlLogs, agentLogs testkit.LogBuffer
	ctrl := exec.Command(c.bin, "controller", "--source", "dir:"+src,
		"--agent-static-token-file", tokens, "--agent-cert-file", pki.CertFile, "--agent-key-file", pki.KeyFile,
		"--agent-bind-address", agentAddr, "--metrics-bind-address", strings.TrimPrefix(admin, "https://"),
		"--health-probe-bind-address", strings.TrimPrefix(probes, "http://"), "--debug-bind-address", strings.TrimPrefix(debug, "http://"),
		"--log-format", "text")
	ctrl.Stdout, ctrl.Stderr = &ctrlLogs, &ctrlLogs
	startProcess(t, ctrl, "controller", &ctrlLogs)
	if err := testkit.WaitHTTP(probes+"/readyz", 30*time.Second); err != nil {
		t.Fatalf("controller never ready: %v\n%s", err, ctrlLogs.String())
	}
	root := filepath.Join(dir, "volume")
	agent := exec.Command(c.bin, "agent", "--server", agentAddr, "--server-name", "127.0.0.1", "--ca-file", pki.CAFile,
		"--token-file", tokenFile, "--root", root, "--admin-bind-address", agentAdmin, "--agent-id", "agent-dev-1", "--log-format", "text")
	agent.Stdout, agent.Stderr = &agentLogs, &agentLogs
	startProcess(t, agent, "agent", &agentLogs)

	load := func() (*sidecar.Snapshot, *snapshot.Content, error) {
		s, err := sidecar.Load(root, sidecar.DefaultLimits())
		if err != nil {
			return nil, nil, err
		}
		content, err := snapshot.Decode(s.File)
		return s, content, err
	}
	waitUntil := func(what string, ok func(*snapshot.Content) bool) *sidecar.Snapshot {
		t.Helper()
		var lastErr error
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			s, content, err := load()
			if err == nil && ok(content) {
				return s
			}
			lastErr = err
		}
		t.Fatalf("timed out waiting for %s (last error %v)\n--- controller ---\n%s\n--- agent ---\n%s", what, lastErr, ctrlLogs.String(), agentLogs.String())
		return nil
	}
	destination := func(content *snapshot.Content, key string) string {
		for _, a := range content.Applications {
			if a.Key() == key {
				return a.Destination.Namespace
			}
		}
		return ""
	}
	first := waitUntil("the first snapshot on the volume", func(content *snapshot.Content) bool {
		return len(content.Applications) == 4 && len(content.Extensions) == 4 && content.Auth.LocalSecretKey != nil
	})

	edit(t, filepath.Join(src, "40-applications.yaml"), "namespace: team-a-web}", "namespace: team-a-web-v2}")
	second := waitUntil("the edited destination", func(content *snapshot.Content) bool {
		return destination(content, "team-a/web") == "team-a-web-v2"
	})
	if second.Version() == first.Version() {
		t.Fatal("an edit did not make a new version")
	}

	unchanged := metricValue(get(t, admin+"/metrics"), `gatehouse_controlplane_snapshot_builds_total{result="unchanged"}`)
	edit(t, filepath.Join(src, "10-settings.yaml"), "    - name: metrics\n", "    - name: metrics\n      backend: [\n")
	// A build reads the broken config and decides it changes nothing it
	// ships (it counts itself after deciding): what the volume has then is
	// what it keeps.
	waitFor(t, 20*time.Second, "a build of the broken extension config", func() bool {
		return metricValue(get(t, admin+"/metrics"), `gatehouse_controlplane_snapshot_builds_total{result="unchanged"}`) > unchanged
	})
	s, content, err := load()
	if err != nil || s.Version() != second.Version() || len(content.Extensions) != 4 {
		t.Fatalf("after breaking the extension config: version %s (want %s), error %v", s.Version(), second.Version(), err)
	}
	metrics := get(t, admin+"/metrics")
	if !strings.Contains(metrics, "gatehouse_build_info{") || !strings.Contains(metrics, `component="controller"`) {
		t.Errorf("metrics do not name the build (gatehouse_build_info{component=\"controller\",...}):\n%s", grep(metrics, "gatehouse_build"))
	}
	if !strings.Contains(metrics, `gatehouse_controlplane_config_problems{reason="InvalidExtensionConfig",severity="error"} 1`) {
		t.Errorf("metrics do not count the broken extension config:\n%s", grep(metrics, "gatehouse_controlplane"))
	}
	if agents := get(t, debug+"/debug/agents"); !strings.Contains(agents, "agent-dev-1") || !strings.Contains(agents, second.Version()) {
		t.Errorf("/debug/agents does not show the agent serving %s:\n%s", second.Version(), agents)
	}
}

func startProcess(t testing.TB, cmd *exec.Cmd, name string, logs *testkit.LogBuffer) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not exit cleanly on SIGTERM: %v\n%s", name, err, logs.String())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			if err := <-done; err == nil {
				t.Logf("%s exited only when killed", name)
			}
			t.Errorf("%s did not stop within 15s of SIGTERM\n%s", name, logs.String())
		}
	})
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in path, atomically as an editor saving would.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := testkit.WriteAtomic(path, bytes.Replace(b, []byte(old), []byte(new), 1)); err != nil {
		t.Fatal(err)
	}
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		p, err := testkit.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, p)
	}
	return ports
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := scraper.Get(url) //nolint:noctx // a test against loopback
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(strings.Join(out, "\n"))
}

// metricValue is the value of series (name{labels} as Prometheus' text
// format writes it) in a /metrics page, 0 when absent.
func metricValue(page, series string) float64 {
	for _, l := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}
