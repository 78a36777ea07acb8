package controllercli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControllerFlagsRefuseWhatCannotWork: a misconfigured controller stops
// before it touches anything, naming the flag to fix.
func TestControllerFlagsRefuseWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.yaml")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexistent")
	tests := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{name: "unknown source", args: []string{"--source", "git:repo"}, want: `--source "git:repo": use "kubernetes" or "dir:PATH"`},
		{name: "dir source without static tokens", args: []string{"--source", "dir:" + dir}, want: "agents need --agent-static-token-file"},
		{name: "dir source with agents off", args: []string{"--source", "dir:" + dir, "--agent-bind-address", "0", "--agent-static-token-file", "f"},
			want: `--source dir:PATH builds the snapshot only for agents, and --agent-bind-address "0" turns the agent endpoint off`, notWant: "agents need --agent-static-token-file"},
		{name: "snapshot directory with agents off", args: []string{"--snapshot-dir", dir, "--agent-bind-address", "0", "--namespace", "gatehouse"},
			want: `--snapshot-dir serves agents, and --agent-bind-address "0" turns the agent endpoint off`},
		{name: "two things to serve", args: []string{"--source", "dir:" + dir, "--agent-static-token-file", "f", "--snapshot-dir", dir}, want: "--snapshot-dir and --source dir:PATH both say what to serve"},
		{name: "dir source that does not exist", args: []string{"--source", "dir:" + missing, "--agent-static-token-file", "f"}, want: "--source dir:" + missing + ": no such directory"},
		{name: "proxy certificate without a Service", args: []string{"--namespace", "gatehouse", "--proxy-service", ""},
			want: `--proxy-service must name the proxy's Service, whose DNS names go into the certificate in --proxy-secret (or --proxy-secret="" issues none)`},
		{name: "profiles beyond loopback", args: []string{"--namespace", "gatehouse", "--profiling", "--profiling-bind-address", ":6060"},
			want: `--profiling-bind-address ":6060": profiles stay on loopback`},
		{name: "a CA ConfigMap without a namespace", args: []string{"--cert-management", "external", "--namespace", ""},
			want: `--ca-configmap needs --namespace (or $POD_NAMESPACE)`},
		{name: "an unknown way to check Argo CD's tokens", args: []string{"--namespace", "gatehouse", "--argocd-token-check", "trust"},
			want: `--argocd-token-check "trust": use "argocd-server" (recommended) or "server-key"`},
		{name: "a collector without a port", args: []string{"--namespace", "gatehouse", "--otlp-endpoint", "otel-collector"},
			want: `--otlp-endpoint "otel-collector": give host:port, e.g. otel-collector.monitoring:4317`},
		{name: "a collector CA without a collector", args: []string{"--namespace", "gatehouse", "--otlp-ca-file", "ca.crt"},
			want: `--otlp-ca-file needs --otlp-endpoint`},
		{name: "dir source that is a file", args: []string{"--source", "dir:" + file, "--agent-static-token-file", "f"}, want: "--source dir:" + file + " is a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(append([]string{"controller"}, tt.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tt.want) || (tt.notWant != "" && strings.Contains(errb.String(), tt.notWant)) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}
