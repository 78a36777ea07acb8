package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped examples are what gatehouse dev runs: their SSO issuer is one
// it serves, each cluster's service has a demo backend, and they hold a tour.
func TestShippedExamples(t *testing.T) {
	w, err := ReadWorld(context.Background(), "../../examples", "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if w.SSO == nil || !w.SSO.Local || w.SSO.Issuer != "http://127.0.0.1:5556/dex" || w.SSO.Audience != "argo-cd" || w.SSO.GroupsClaim != "groups" {
		t.Errorf("SSO %+v, want the local issuer http://127.0.0.1:5556/dex for argo-cd, groups claim groups", w.SSO)
	}
	want := []BackendSpec{
		{Addr: "127.0.0.1:9181", Name: "in-cluster", URLs: []string{"http://127.0.0.1:9181"}},
		{Addr: "127.0.0.1:9182", Name: "production", URLs: []string{"http://127.0.0.1:9182"}},
	}
	if len(w.Backends) != len(want) {
		t.Fatalf("backends %+v, want %+v", w.Backends, want)
	}
	for i := range want {
		if w.Backends[i].Addr != want[i].Addr || w.Backends[i].Name != want[i].Name || strings.Join(w.Backends[i].URLs, " ") != strings.Join(want[i].URLs, " ") {
			t.Errorf("backend %d = %+v, want %+v", i, w.Backends[i], want[i])
		}
	}
	if len(w.Notes) != 0 {
		t.Errorf("notes %q, want none", w.Notes)
	}
	if w.Tour == nil || len(w.Tour.Steps) == 0 {
		t.Fatal("the examples hold no tour")
	}
}

func TestReadWorld(t *testing.T) {
	const settings = `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  oidc.config: |
    issuer: %s
    clientID: argo-cd
`
	const extensions = `apiVersion: v1
kind: ConfigMap
metadata: {name: gatehouse-extensions, namespace: argocd}
data:
  extension.config: |
    extensions:
    - name: a
      backend:
        services:
        - url: http://127.0.0.1:9001
    - name: b
      backend:
        services:
        - urls: [http://127.0.0.1:9001, http://localhost:9002/base]
          cluster: {server: https://kubernetes.default.svc}
        - url: http://metrics.monitoring.svc:8080
          cluster: {name: production}
`
	tests := []struct {
		name      string
		issuer    string
		wantLocal bool
		wantNotes []string
	}{
		{"loopback issuer", "http://127.0.0.1:5556/dex", true, []string{"extension b: http://metrics.monitoring.svc:8080 is not an http:// URL on loopback"}},
		{"an identity provider elsewhere", "https://sso.example.com", false, []string{"SSO issuer: https://sso.example.com is not an http:// URL", "extension b: http://metrics.monitoring.svc:8080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "settings.yaml"), strings.Replace(settings, "%s", tt.issuer, 1))
			write(t, filepath.Join(dir, "extensions.yaml"), extensions)
			w, err := ReadWorld(context.Background(), dir, "argocd")
			if err != nil {
				t.Fatal(err)
			}
			if w.SSO == nil || w.SSO.Local != tt.wantLocal || w.SSO.Issuer != tt.issuer {
				t.Errorf("SSO %+v, want issuer %s, local %v", w.SSO, tt.issuer, tt.wantLocal)
			}
			if len(w.Notes) != len(tt.wantNotes) {
				t.Fatalf("notes %q, want %d", w.Notes, len(tt.wantNotes))
			}
			for i, n := range tt.wantNotes {
				if !strings.HasPrefix(w.Notes[i], n) {
					t.Errorf("note %q, want it to start %q", w.Notes[i], n)
				}
			}
			got := map[string]string{}
			for _, b := range w.Backends {
				got[b.Addr] = b.Name
			}
			want := map[string]string{"127.0.0.1:9001": "default, https://kubernetes.default.svc", "localhost:9002": "https://kubernetes.default.svc"}
			if len(got) != len(want) || got["127.0.0.1:9001"] != want["127.0.0.1:9001"] || got["localhost:9002"] != want["localhost:9002"] {
				t.Errorf("backends %v, want %v", got, want)
			}
			if w.Tour != nil {
				t.Error("a directory without a tour has one")
			}
		})
	}
	t.Run("a broken tour is an error naming its file", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "tour.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gatehouse-dev-tour, namespace: argocd}\ndata:\n  tour.yaml: |\n    steps:\n    - title: x\n      call: {user: alice, path: /x}\n")
		_, err := ReadWorld(context.Background(), dir, "argocd")
		if err == nil || !strings.Contains(err.Error(), "tour.yaml") || !strings.Contains(err.Error(), "expect.status") {
			t.Errorf("error %v, want one naming tour.yaml and the missing expect.status", err)
		}
	})
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
