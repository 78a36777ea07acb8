package proxycli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArgoCDServerFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    ArgoCDServerOptions
		want string // "" is accepted
	}{
		{"off", ArgoCDServerOptions{}, ""},
		{"in-cluster URL", ArgoCDServerOptions{URL: "https://argocd-server.argocd.svc"}, ""},
		{"plain HTTP", ArgoCDServerOptions{URL: "http://argocd-server.argocd.svc"}, "must be https"},
		{"CA that is not PEM", ArgoCDServerOptions{URL: "https://argocd-server", CAFile: notPEM}, "no PEM certificate"},
		{"CA missing", ArgoCDServerOptions{URL: "https://argocd-server", CAFile: filepath.Join(dir, "none")}, "--argocd-server-ca-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.o.server()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			case tt.want == "" && (s == nil) != (tt.o.URL == ""):
				t.Fatalf("server %+v for URL %q", s, tt.o.URL)
			}
		})
	}
}
