package extconfig

import (
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// The examples below are Argo CD's documentation's
// (docs/developer-guide/extensions/proxy-extensions.md and
// docs/proposals/proxy-extensions.md), as written there.
const (
	docAllSettings = `extensions:
- name: httpbin
  backend:
    connectionTimeout: 2s
    keepAlive: 15s
    idleConnectionTimeout: 60s
    maxIdleConnections: 30
    services:
    - url: http://httpbin.org
      headers:
      - name: some-header
        value: '$some.argocd.secret.key'
      cluster:
        name: some-cluster
        server: https://some-cluster
`
	docPerExtensionKey = `connectionTimeout: 2s
keepAlive: 15s
idleConnectionTimeout: 60s
maxIdleConnections: 30
services:
- url: http://httpbin.org
  headers:
  - name: some-header
    value: '$some.argocd.secret.key'
  cluster:
    name: some-cluster
    server: https://some-cluster
`
	// The documentation's multi-backend example lacks two colons.
	docMultiBackendAsWritten = `extensions:
- name: some-extension
  backend:
    services:
    - url: http://extension-name.com:8080
      cluster
        name: kubernetes.local
    - url: https://extension-name.ppd.cluster.k8s.local:8080
      cluster
        server: user@ppd.cluster.k8s.local
`
	docMultiBackendFixed = `extensions:
- name: some-extension
  backend:
    services:
    - url: http://extension-name.com:8080
      cluster:
        name: kubernetes.local
    - url: https://extension-name.ppd.cluster.k8s.local:8080
      cluster:
        server: user@ppd.cluster.k8s.local
`
	docAuthorizationHeader = `extensions:
- name: some-extension
  backend:
    services:
    - url: http://extension-name.com:8080
      headers:
      - name: Authorization
        value: '$some-extension.authorization.header'
`
	docProposalSingle = `extensions:
  - name: some-extension
    enabled: true
    backend:
      idleConnTimeout: 10s
      services:
        - url: http://extension-name.com:8080
`
)

func TestArgoCDDocumentedExamples(t *testing.T) {
	httpbin := snapshot.Extension{Name: "httpbin", Backend: snapshot.Backend{
		ConnectionTimeout:     dur(2 * time.Second),
		KeepAlive:             dur(15 * time.Second),
		IdleConnectionTimeout: dur(60 * time.Second),
		MaxIdleConnections:    30,
		Services: []snapshot.Service{{
			URLs: []string{"http://httpbin.org"},
			// One service: Argo CD ignores its cluster.
			Headers: []snapshot.Header{{Name: "some-header", Secret: ref(settings.ArgoCDSecret, "some.argocd.secret.key")}},
		}},
	}}
	tests := []struct {
		name     string
		argoCM   map[string]string
		want     []snapshot.Extension
		problems []want
	}{
		{
			name:   "all settings in extension.config",
			argoCM: map[string]string{settings.KeyExtensionConfig: docAllSettings},
			want:   []snapshot.Extension{httpbin},
		},
		{
			name:   "the same in extension.config.httpbin",
			argoCM: map[string]string{settings.KeyExtensionConfig + ".httpbin": docPerExtensionKey},
			want:   []snapshot.Extension{httpbin},
		},
		{
			name:     "the multi-backend example, as written, does not parse",
			argoCM:   map[string]string{settings.KeyExtensionConfig: docMultiBackendAsWritten},
			problems: []want{{mainArgo, "", false, []string{"the YAML does not parse"}}},
		},
		{
			name:   "the multi-backend example, fixed",
			argoCM: map[string]string{settings.KeyExtensionConfig: docMultiBackendFixed},
			want: []snapshot.Extension{ext("some-extension",
				snapshot.Service{URLs: []string{"http://extension-name.com:8080"}, Cluster: &snapshot.ClusterRef{Name: "kubernetes.local"}},
				snapshot.Service{URLs: []string{"https://extension-name.ppd.cluster.k8s.local:8080"}, Cluster: &snapshot.ClusterRef{Server: "user@ppd.cluster.k8s.local"}},
			)},
		},
		{
			name:   "an Authorization header from argocd-secret",
			argoCM: map[string]string{settings.KeyExtensionConfig: docAuthorizationHeader},
			want: []snapshot.Extension{ext("some-extension", snapshot.Service{
				URLs:    []string{"http://extension-name.com:8080"},
				Headers: []snapshot.Header{{Name: "Authorization", Secret: ref(settings.ArgoCDSecret, "some-extension.authorization.header")}},
			})},
		},
		{
			name:   "the proposal's single backend",
			argoCM: map[string]string{settings.KeyExtensionConfig: docProposalSingle},
			want: []snapshot.Extension{{Name: "some-extension", Backend: snapshot.Backend{
				IdleConnectionTimeout: dur(10 * time.Second),
				Services:              []snapshot.Service{svc("http://extension-name.com:8080")},
			}}},
			problems: []want{{mainArgo, "some-extension", true, []string{"backend.idleConnTimeout: Argo CD 3.5 ignores it"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := fixtureSecrets()
			res := Parse(Input{ArgoCDCM: tt.argoCM, Secrets: secrets.lookup})
			checkResult(t, res, secrets, "")
			if !reflect.DeepEqual(res.Extensions, tt.want) {
				t.Errorf("extensions:\n got %+v\nwant %+v", res.Extensions, tt.want)
			}
			checkProblems(t, res.Problems, tt.problems)
		})
	}
}
