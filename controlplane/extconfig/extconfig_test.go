package extconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// want is a Problem expectation: the message must contain every substring.
type want struct {
	source    string
	extension string
	warning   bool
	contains  []string
}

func argoSrc(key string) string { return location{settings.ArgoCDConfigMap, key}.String() }
func gatehouseSrc(key string) string {
	return location{gatehousev1.ExtensionsConfigMap, key}.String()
}

var mainArgo = argoSrc(settings.KeyExtensionConfig)

func dur(d time.Duration) snapshot.Duration { return snapshot.Duration(d) }

func ref(secret, key string) *snapshot.SecretRef {
	return &snapshot.SecretRef{Path: snapshot.SecretPath(secret, key)}
}

func svc(url string) snapshot.Service { return snapshot.Service{URLs: []string{url}} }

func ext(name string, services ...snapshot.Service) snapshot.Extension {
	return snapshot.Extension{Name: name, Backend: snapshot.Backend{Services: services}}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		argo      map[string]string
		gatehouse map[string]string
		want      []snapshot.Extension
		secrets   []string // the paths Result.Secrets must hold, exactly
		problems  []want
	}{
		{
			name: "no config at all serves nothing and reports nothing",
		},
		{
			name: "an empty extension.config serves nothing",
			argo: map[string]string{settings.KeyExtensionConfig: "", "url": "https://argocd.example.com"},
		},
		{
			name: "the proposal's format: enabled, idleConnTimeout, clusterName",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: some-extension
    enabled: true
    backend:
      idleConnTimeout: 10s
      services:
        - url: http://extension-name.com:8080
          clusterName: kubernetes.local
        - url: https://extension-name.ppd.cluster.k8s.local:8080
          clusterName: admins@ppd.cluster.k8s.local
`},
			want: []snapshot.Extension{{Name: "some-extension", Backend: snapshot.Backend{
				IdleConnectionTimeout: dur(10 * time.Second),
				Services: []snapshot.Service{
					{URLs: []string{"http://extension-name.com:8080"}, Cluster: &snapshot.ClusterRef{Name: "kubernetes.local"}},
					{URLs: []string{"https://extension-name.ppd.cluster.k8s.local:8080"}, Cluster: &snapshot.ClusterRef{Name: "admins@ppd.cluster.k8s.local"}},
				},
			}}},
		},
		{
			// Argo CD reads neither clusterName nor urls, and refuses
			// several services without cluster, or one without url.
			name: "in argocd-cm the proposal's clusterName and Gatehouse's urls are refused, as Argo CD refuses them",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: by-cluster-name
    backend:
      services:
        - {url: http://a, clusterName: a}
        - {url: http://b, clusterName: b}
  - name: by-urls
    backend:
      services: [{urls: [http://a, http://b]}]
`},
			problems: []want{
				{mainArgo, "by-cluster-name", false, []string{"backend.services[0]: cluster is required when an extension has several services"}},
				{mainArgo, "by-cluster-name", false, []string{"backend.services[1]: cluster is required"}},
				{mainArgo, "by-urls", false, []string{"backend.services[0]: url is required in argocd-cm: Argo CD reads no urls"}},
			},
		},
		{
			name: "one cluster name or server selects one service",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: shared-name
    backend:
      services:
        - {url: http://a, cluster: {name: prod}}
        - {url: http://b, cluster: {name: prod, server: https://prod}}
  - name: shared-server
    backend:
      services:
        - {url: http://a, cluster: {server: https://prod}}
        - {url: http://b, cluster: {name: other, server: https://prod}}
`},
			problems: []want{
				{gatehouseSrc(settings.KeyExtensionConfig), "shared-name", false, []string{`backend.services[1]: cluster name "prod" is services[0]'s too`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "shared-server", false, []string{`backend.services[1]: cluster server "https://prod" is services[0]'s too`}},
			},
		},
		{
			name: "in argocd-cm a \"$\" reference is read in header values only",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: $some.argocd.secret.key
    backend: {services: [{url: http://a}]}
  - name: refs
    backend:
      keepAlive: $some.argocd.secret.key
      services:
        - {url: $some.argocd.secret.key, cluster: {name: $a, server: $b}}
        - url: http://b
          cluster: {name: b}
          headers: [{name: $some.argocd.secret.key, value: x}]
`},
			problems: []want{
				{mainArgo, "$some.argocd.secret.key", false, []string{`name: a "$" reference is read only in a header value`}},
				{mainArgo, "refs", false, []string{`backend.keepAlive: a "$" reference`}},
				{mainArgo, "refs", false, []string{`backend.services[0].cluster.name: a "$" reference`}},
				{mainArgo, "refs", false, []string{`backend.services[0].cluster.server: a "$" reference`}},
				{mainArgo, "refs", false, []string{`backend.services[0].url: a "$" reference`}},
				{mainArgo, "refs", false, []string{`backend.services[1].headers[0].name: a "$" reference`}},
			},
		},
		{
			name:     "in argocd-cm a url's query and fragment are dropped, as Argo CD ignores them, and its path is kept, with a warning",
			argo:     map[string]string{settings.KeyExtensionConfig + ".p": "services: [{url: 'HTTP://Host:80/base?q=1#f'}]"},
			want:     []snapshot.Extension{ext("p", svc("http://Host:80/base"))},
			problems: []want{{argoSrc(settings.KeyExtensionConfig + ".p"), "p", true, []string{`its query and fragment are ignored, as Argo CD ignores them`, `Gatehouse keeps its path (requests go below http://Host:80/base)`}}},
		},
		{
			name:     "in argocd-cm a url's path is kept, with a warning, since Argo CD drops it",
			argo:     map[string]string{settings.KeyExtensionConfig + ".p": "services: [{url: 'http://host/base/'}]"},
			want:     []snapshot.Extension{ext("p", svc("http://host/base/"))},
			problems: []want{{argoSrc(settings.KeyExtensionConfig + ".p"), "p", true, []string{`url "http://host/base/": Gatehouse keeps its path`}}},
		},
		{
			name: "in argocd-cm a url without a path needs no word",
			argo: map[string]string{settings.KeyExtensionConfig + ".p": "services: [{url: 'http://host/'}]"},
			want: []snapshot.Extension{ext("p", svc("http://host/"))},
		},
		{
			name:      "in gatehouse-extensions a url's path is kept",
			gatehouse: map[string]string{settings.KeyExtensionConfig + ".p": "services: [{url: 'http://host/base'}]"},
			want:      []snapshot.Extension{ext("p", svc("http://host/base"))},
		},
		{
			name:     "in argocd-cm proxyconfig, where Argo CD reads transport settings, is refused",
			argo:     map[string]string{settings.KeyExtensionConfig + ".p": "proxyconfig: {connectionTimeout: 5s}\nservices: [{url: 'http://host'}]"},
			problems: []want{{argoSrc(settings.KeyExtensionConfig + ".p"), "p", false, []string{`field "proxyconfig": Argo CD 3.5 reads its transport settings there`}}},
		},
		{
			name: "enabled: false is not served; in argocd-cm a warning says Argo CD serves it, and it is checked as Argo CD checks it",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: "off"
    enabled: false
    backend:
      services: [{url: "not even a url"}]
  - name: "on"
    backend:
      services: [{url: http://on}]
`},
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
  - name: "argo-off"
    enabled: false
    backend:
      services: [{url: http://off}]
  - name: "argo-off-broken"
    enabled: false
    backend:
      services: [{url: "not even a url"}]
`},
			want: []snapshot.Extension{ext("on", svc("http://on"))},
			problems: []want{
				{mainArgo, "argo-off", true, []string{"enabled: false: not served by Gatehouse; Argo CD ignores enabled"}},
				{mainArgo, "argo-off-broken", false, []string{`url "not even a url": the scheme must be http or https`}},
			},
		},
		{
			name: "Argo CD's format with every backend setting",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: metrics
  backend:
    connectionTimeout: 2s
    keepAlive: 15s
    idleConnectionTimeout: 60s
    maxIdleConnections: 30
    services:
    - url: http://metrics.prod:8080
      cluster: {name: prod, server: https://prod}
      headers:
      - {name: X-Scope, value: team-a}
    - url: http://metrics.stage:8080
      cluster: {server: https://stage}
`},
			want: []snapshot.Extension{{Name: "metrics", Backend: snapshot.Backend{
				ConnectionTimeout:     dur(2 * time.Second),
				KeepAlive:             dur(15 * time.Second),
				IdleConnectionTimeout: dur(time.Minute),
				MaxIdleConnections:    30,
				Services: []snapshot.Service{
					{
						URLs:    []string{"http://metrics.prod:8080"},
						Cluster: &snapshot.ClusterRef{Name: "prod", Server: "https://prod"},
						Headers: []snapshot.Header{{Name: "X-Scope", Value: "team-a"}},
					},
					{URLs: []string{"http://metrics.stage:8080"}, Cluster: &snapshot.ClusterRef{Server: "https://stage"}},
				},
			}}},
		},
		{
			name: "in argocd-cm a lone service serves every cluster, as in Argo CD",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: lone
  backend:
    services:
    - url: http://lone
      cluster: {name: some-cluster}
`},
			want: []snapshot.Extension{ext("lone", svc("http://lone"))},
		},
		{
			name: "in gatehouse-extensions a lone service keeps its cluster",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: lone
  backend:
    services:
    - url: http://lone
      cluster: {name: some-cluster}
`},
			want: []snapshot.Extension{ext("lone", snapshot.Service{URLs: []string{"http://lone"}, Cluster: &snapshot.ClusterRef{Name: "some-cluster"}})},
		},
		{
			name: "per-extension keys hold the backend itself",
			argo: map[string]string{
				settings.KeyExtensionConfig + ".alpha": "services:\n- url: http://alpha\nconnectionTimeout: 3s\n",
				settings.KeyExtensionConfig + ".beta":  "name: ignored\nservices:\n- url: http://beta\n",
				settings.KeyExtensionConfig:            "extensions:\n- name: gamma\n  backend:\n    services:\n    - url: http://gamma\n",
			},
			want: []snapshot.Extension{
				{Name: "alpha", Backend: snapshot.Backend{ConnectionTimeout: dur(3 * time.Second), Services: []snapshot.Service{svc("http://alpha")}}},
				ext("beta", svc("http://beta")),
				ext("gamma", svc("http://gamma")),
			},
			problems: []want{
				{argoSrc(settings.KeyExtensionConfig + ".alpha"), "alpha", true, []string{"connectionTimeout: Argo CD 3.5 ignores it", "Gatehouse applies it"}},
				{argoSrc(settings.KeyExtensionConfig + ".beta"), "beta", true, []string{`the key "extension.config.beta" names the extension`}},
			},
		},
		{
			name: "header $key reads argocd-secret, trimmed; only referenced keys are disclosed",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: h
  backend:
    services:
    - url: http://h
      headers:
      - {name: X-Token, value: $some.argocd.secret.key}
`},
			want:    []snapshot.Extension{ext("h", snapshot.Service{URLs: []string{"http://h"}, Headers: []snapshot.Header{{Name: "X-Token", Secret: ref(settings.ArgoCDSecret, "some.argocd.secret.key")}}})},
			secrets: []string{"argocd-secret/some.argocd.secret.key"},
		},
		{
			name: "header $secret:key reads a Secret labelled part-of argocd",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: h
  backend:
    services:
    - url: http://h
      headers:
      - {name: Authorization, value: "$ext-creds:token"}
`},
			want:    []snapshot.Extension{ext("h", snapshot.Service{URLs: []string{"http://h"}, Headers: []snapshot.Header{{Name: "Authorization", Secret: ref("ext-creds", "token")}}})},
			secrets: []string{"ext-creds/token"},
		},
		{
			name: "header secrets that do not resolve drop the extension, naming secret and key",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: unlabelled
  backend: {services: [{url: http://h, headers: [{name: A, value: "$unlabelled:token"}]}]}
- name: no-secret
  backend: {services: [{url: http://h, headers: [{name: A, value: "$nowhere:token"}]}]}
- name: no-key
  backend: {services: [{url: http://h, headers: [{name: A, value: "$missing.key"}]}]}
- name: signing-key
  backend: {services: [{url: http://h, headers: [{name: A, value: "$server.secretkey"}]}]}
- name: cluster-creds
  backend: {services: [{url: http://h, headers: [{name: A, value: "$cluster-prod:config"}]}]}
- name: no-name
  backend: {services: [{url: http://h, headers: [{name: A, value: "$ext-creds:"}]}]}
- name: multi-line
  backend: {services: [{url: http://h, headers: [{name: A, value: "$multi.line"}]}]}
- name: blank
  backend: {services: [{url: http://h, headers: [{name: A, value: "$blank"}]}]}
- name: empty-value
  backend: {services: [{url: http://h, headers: [{name: A, value: ""}]}]}
`},
			problems: []want{
				{mainArgo, "blank", false, []string{`Secret "argocd-secret" key "blank" is empty`}},
				{mainArgo, "cluster-creds", false, []string{`Secret "cluster-prod"`, "cluster credentials", "never forwards"}},
				{mainArgo, "empty-value", false, []string{"headers[0] (A): value is required"}},
				{mainArgo, "multi-line", false, []string{`key "multi.line" holds a line break`}},
				{mainArgo, "no-key", false, []string{`Secret "argocd-secret" has no key "missing.key"`}},
				{mainArgo, "no-name", false, []string{`"$ext-creds:" names no secret key`}},
				{mainArgo, "no-secret", false, []string{`Secret "nowhere" does not exist`}},
				{mainArgo, "signing-key", false, []string{"server.secretkey signs Argo CD's session tokens"}},
				{mainArgo, "unlabelled", false, []string{`Secret "unlabelled" lacks the label app.kubernetes.io/part-of=argocd`}},
			},
		},
		{
			name: "Gatehouse additions: system, requestTimeout, limits, urls, TLS",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: hardened
  system: true
  requestTimeout: 30s
  limits:
    perUser: {requestsPerSecond: 2.5, burst: 5}
    perExtension: {requestsPerSecond: 100, burst: 200}
    maxConcurrent: 50
  backend:
    services:
    - urls: [https://a.backend:8443, https://b.backend:8443]
      tls:
        caSecretRef: {name: backend-ca}
        clientCertSecretRef: {name: client-cert}
        serverName: backend.internal
`, settings.KeyExtensionConfig + ".custom-ca": `
services:
- url: https://c.backend
  tls:
    caSecretRef: {name: backend-ca, key: other.pem}
    insecureSkipVerify: false
`},
			want: []snapshot.Extension{
				{Name: "custom-ca", Backend: snapshot.Backend{Services: []snapshot.Service{{
					URLs: []string{"https://c.backend"}, TLS: &snapshot.TLS{CA: ref("backend-ca", "other.pem")},
				}}}},
				{
					Name: "hardened", System: true,
					Limits: snapshot.Limits{
						PerUser:       snapshot.Rate{RequestsPerSecond: 2.5, Burst: 5},
						PerExtension:  snapshot.Rate{RequestsPerSecond: 100, Burst: 200},
						MaxConcurrent: 50,
					},
					Backend: snapshot.Backend{RequestTimeout: dur(30 * time.Second), Services: []snapshot.Service{{
						URLs: []string{"https://a.backend:8443", "https://b.backend:8443"},
						TLS: &snapshot.TLS{
							CA: ref("backend-ca", "ca.crt"), ClientCert: ref("client-cert", "tls.crt"), ClientKey: ref("client-cert", "tls.key"),
							ServerName: "backend.internal",
						},
					}}},
				},
			},
			secrets: []string{"backend-ca/ca.crt", "backend-ca/other.pem", "client-cert/tls.crt", "client-cert/tls.key"},
		},
		{
			name: "TLS references that do not resolve drop the extension",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: no-ca
  backend: {services: [{url: https://x, tls: {caSecretRef: {name: nowhere}}}]}
- name: no-ca-key
  backend: {services: [{url: https://x, tls: {caSecretRef: {name: backend-ca, key: missing.pem}}}]}
- name: half-cert
  backend: {services: [{url: https://x, tls: {clientCertSecretRef: {name: half-cert}}}]}
- name: nameless-ref
  backend: {services: [{url: https://x, tls: {caSecretRef: {key: ca.crt}}}]}
`},
			problems: []want{
				{gatehouseSrc(settings.KeyExtensionConfig), "half-cert", false, []string{`Secret "half-cert" has no key "tls.key"`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "nameless-ref", false, []string{"tls.caSecretRef: name is required"}},
				{gatehouseSrc(settings.KeyExtensionConfig), "no-ca", false, []string{`backend.services[0].tls.caSecretRef: Secret "nowhere" does not exist`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "no-ca-key", false, []string{`Secret "backend-ca" has no key "missing.pem"`}},
			},
		},
		{
			name: "TLS material that is not PEM, or not a certificate and its key, drops the extension",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: ca-not-pem
  backend: {services: [{url: https://x, tls: {caSecretRef: {name: not-pem}}}]}
- name: key-as-ca
  backend: {services: [{url: https://x, tls: {caSecretRef: {name: key-as-ca}}}]}
- name: client-not-pem
  backend: {services: [{url: https://x, tls: {clientCertSecretRef: {name: not-pem}}}]}
- name: wrong-key
  backend: {services: [{url: https://x, tls: {clientCertSecretRef: {name: wrong-key}}}]}
`},
			problems: []want{
				{gatehouseSrc(settings.KeyExtensionConfig), "ca-not-pem", false, []string{`backend.services[0].tls.caSecretRef: Secret "not-pem" key "ca.crt" is not a PEM CA bundle: it holds no PEM certificate`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "client-not-pem", false, []string{`backend.services[0].tls.clientCertSecretRef: Secret "not-pem" is not a PEM client certificate and key: tls.crt: it holds no PEM certificate`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "key-as-ca", false, []string{`Secret "key-as-ca" key "ca.crt" is not a PEM CA bundle: PEM block 1 is "EC PRIVATE KEY", not a CERTIFICATE; put the PEM certificates`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "wrong-key", false, []string{`Secret "wrong-key" is not a PEM client certificate and key: tls.key does not hold the private key of tls.crt (tls: private key does not match public key)`}},
			},
		},
		{
			name: "gatehouse-extensions replaces argocd-cm's extension of the same name, silently",
			argo: map[string]string{
				settings.KeyExtensionConfig:          "extensions:\n- {name: shared, backend: {services: [{url: http://from-argocd}]}}\n- {name: argo-only, backend: {services: [{url: http://argo-only}]}}",
				settings.KeyExtensionConfig + ".per": "services: [{url: http://per-from-argocd}]",
			},
			gatehouse: map[string]string{
				settings.KeyExtensionConfig:          "extensions:\n- {name: shared, backend: {services: [{url: http://from-gatehouse}]}}",
				settings.KeyExtensionConfig + ".per": "services: [{url: http://per-from-gatehouse}]",
			},
			want: []snapshot.Extension{
				ext("argo-only", svc("http://argo-only")),
				ext("per", svc("http://per-from-gatehouse")),
				ext("shared", svc("http://from-gatehouse")),
			},
		},
		{
			name: "a disabled or broken override still hides argocd-cm's definition",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- {name: disabled, backend: {services: [{url: http://argo}]}}
- {name: broken, backend: {services: [{url: http://argo}]}}
- {name: unparsed, backend: {services: [{url: http://argo}]}}
`},
			gatehouse: map[string]string{
				settings.KeyExtensionConfig:               "extensions:\n- {name: disabled, enabled: false}\n- {name: broken, backend: {services: []}}",
				settings.KeyExtensionConfig + ".unparsed": "services: [",
			},
			problems: []want{
				{gatehouseSrc(settings.KeyExtensionConfig), "broken", false, []string{"backend.services: at least one service is required"}},
				{gatehouseSrc(settings.KeyExtensionConfig + ".unparsed"), "", false, []string{"the YAML does not parse"}},
			},
		},
		{
			name: "YAML that does not parse is the whole key's problem",
			argo: map[string]string{
				settings.KeyExtensionConfig:         "extensions:\n- name: a\n  backend: {services: [{url: http://a}]\n",
				settings.KeyExtensionConfig + ".ok": "services: [{url: http://ok}]",
			},
			want:     []snapshot.Extension{ext("ok", svc("http://ok"))},
			problems: []want{{mainArgo, "", false, []string{"the YAML does not parse", "fix it"}}},
		},
		{
			name:     "extension.config holding a bare list is the whole key's problem",
			argo:     map[string]string{settings.KeyExtensionConfig: "- name: argo-rollouts\n  backend:\n    services:\n    - url: http://rollouts\n"},
			problems: []want{{mainArgo, "", false, []string{`want a mapping with an "extensions" list`}}},
		},
		{
			name: "one bad extension never takes the others down",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: good-1
  backend: {services: [{url: http://good-1}]}
- name: bad
  backend: {services: [{url: ftp://bad}]}
- name: good-2
  backend: {services: [{url: http://good-2}]}
`},
			want:     []snapshot.Extension{ext("good-1", svc("http://good-1")), ext("good-2", svc("http://good-2"))},
			problems: []want{{mainArgo, "bad", false, []string{`url "ftp://bad": the scheme must be http or https`}}},
		},
		{
			name: "the same name twice in one ConfigMap drops every copy",
			argo: map[string]string{
				settings.KeyExtensionConfig: `
extensions:
- {name: twice, backend: {services: [{url: http://one}]}}
- {name: twice, backend: {services: [{url: http://two}]}}
- {name: keyed-too, backend: {services: [{url: http://list}]}}
- {name: single, backend: {services: [{url: http://single}]}}
`,
				settings.KeyExtensionConfig + ".keyed-too": "services: [{url: http://keyed}]",
			},
			want: []snapshot.Extension{ext("single", svc("http://single"))},
			problems: []want{
				{"ConfigMap argocd-cm", "keyed-too", false, []string{"defined 2 times", `key "extension.config" extensions[2]`, `key "extension.config.keyed-too"`}},
				{"ConfigMap argocd-cm", "twice", false, []string{"defined 2 times", "extensions[0]", "extensions[1]", "keep one definition"}},
			},
		},
		{
			name: "unknown fields are warnings and the extension is still served",
			gatehouse: map[string]string{settings.KeyExtensionConfig: `
extension: typo-at-the-top
extensions:
- name: typos
  requestTimout: 30s
  backend:
    requestTimeout: 10s
    services:
    - URL: http://ignored
      url: http://typos
      headrs: []
`},
			want: []snapshot.Extension{ext("typos", svc("http://typos"))},
			problems: []want{
				{gatehouseSrc(settings.KeyExtensionConfig), "", true, []string{`unknown field "extension"`, `did you mean "extensions"?`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "typos", true, []string{`"backend.requestTimeout" is not read at this level`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "typos", true, []string{`unknown field "backend.services[0].URL"`, "case-sensitive", `"url"`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "typos", true, []string{`unknown field "backend.services[0].headrs"`, `did you mean "headers"?`}},
				{gatehouseSrc(settings.KeyExtensionConfig), "typos", true, []string{`unknown field "requestTimout"`, `did you mean "requestTimeout"?`}},
			},
		},
		{
			name: "conflicting spellings, bad values and bad names are the extension's problems",
			argo: map[string]string{settings.KeyExtensionConfig: `
extensions:
- {name: both-urls, backend: {services: [{url: http://a, urls: [http://b]}]}}
- {name: both-clusters, backend: {services: [{url: http://a, clusterName: x, cluster: {name: x}}]}}
- {name: both-idle, backend: {idleConnTimeout: 1s, idleConnectionTimeout: 2s, services: [{url: http://a}]}}
- {name: no-unit, backend: {connectionTimeout: 2, services: [{url: http://a}]}}
- {name: bad-duration, requestTimeout: soon, backend: {services: [{url: http://a}]}}
- {name: negative, backend: {keepAlive: -1s, services: [{url: http://a}]}}
- {name: wrong-type, backend: {maxIdleConnections: thirty, services: [{url: http://a}]}}
- {name: creds-in-url, backend: {services: [{url: "https://user:VALUE-pass@host"}]}}
- {name: twice-url, backend: {services: [{urls: [http://a, http://a]}]}}
- {name: empty-cluster, backend: {services: [{url: http://a, cluster: {}}]}}
- {name: system-cluster, system: true, backend: {services: [{url: http://a, cluster: {name: x}}, {url: http://b}]}}
- {name: "bad name", backend: {services: [{url: http://a}]}}
- {name: no-services, backend: {}}
- backend: {services: [{url: http://nameless}]}
- just a string
- {name: yes, backend: {services: [{url: http://a}]}}
`},
			problems: []want{
				{mainArgo, "bad name", false, []string{"only letters, digits"}},
				{mainArgo, "bad-duration", false, []string{`requestTimeout: duration "soon"`}},
				{mainArgo, "both-clusters", false, []string{"give cluster (Argo CD's form) or clusterName (the proposal's), not both"}},
				{mainArgo, "both-idle", false, []string{"backend.idleConnTimeout (the proposal's name) and backend.idleConnectionTimeout (Argo CD's) are both given"}},
				{mainArgo, "both-urls", false, []string{"give url (one backend) or urls"}},
				{mainArgo, "creds-in-url", false, []string{"holds credentials", "https://user:xxxxx@host"}},
				{mainArgo, "empty-cluster", false, []string{"backend.services[0].cluster: give a name, a server or both"}},
				{mainArgo, "extensions[13]", false, []string{"name is required"}},
				{mainArgo, "extensions[14]", false, []string{"want a mapping with a name and a backend: want a mapping, not a string"}},
				{mainArgo, "extensions[15]", false, []string{"name: want a string, not true or false: quote the value"}},
				{mainArgo, "negative", false, []string{`backend.keepAlive: duration "-1s" is negative`}},
				{mainArgo, "no-services", false, []string{"at least one service is required"}},
				{mainArgo, "no-unit", false, []string{`backend.connectionTimeout: want a duration such as "30s"`}},
				{mainArgo, "system-cluster", false, []string{"a system extension serves no Application"}},
				{mainArgo, "system-cluster", false, []string{"backend.services[1]: cluster is required"}},
				{mainArgo, "twice-url", false, []string{`url "http://a" is listed twice`}},
				{mainArgo, "twice-url", false, []string{"url is required in argocd-cm"}},
				{mainArgo, "wrong-type", false, []string{"backend.maxIdleConnections: want a whole number, not a string"}},
			},
		},
		{
			name: "keys Argo CD misreads are refused; keys gatehouse-extensions does not hold are ignored with a warning",
			argo: map[string]string{
				"extension.configs": "services: [{url: http://s}]",
				"extension.config.": "services: [{url: http://s}]",
				"url":               "https://argocd.example.com",
			},
			gatehouse: map[string]string{"extensions.config": "extensions: []"},
			problems: []want{
				{argoSrc("extension.config."), "", false, []string{`key "extension.config." is the list to Argo CD`}},
				{argoSrc("extension.configs"), "s", false, []string{`key "extension.configs" is extension "s" to Argo CD`, `rename the key to "extension.config.s"`}},
				{gatehouseSrc("extensions.config"), "", true, []string{"key ignored"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := fixtureSecrets()
			res := Parse(Input{ArgoCDCM: tt.argo, Gatehouse: tt.gatehouse, Secrets: secrets.lookup})
			checkResult(t, res, secrets, "")
			if !reflect.DeepEqual(res.Extensions, tt.want) {
				t.Errorf("extensions:\n got %+v\nwant %+v", res.Extensions, tt.want)
			}
			var gotPaths []string
			for p := range res.Secrets {
				gotPaths = append(gotPaths, p)
			}
			if !sameSet(gotPaths, tt.secrets) {
				t.Errorf("secrets: got %v, want %v", gotPaths, tt.secrets)
			}
			checkProblems(t, res.Problems, tt.problems)
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[string]bool{}
	for _, s := range a {
		set[s] = true
	}
	for _, s := range b {
		if !set[s] {
			return false
		}
	}
	return true
}

func checkProblems(t *testing.T, got []configproblem.Problem, want []want) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:", len(got), len(want))
		for _, p := range got {
			t.Logf("  %s", p.Error())
		}
		return
	}
	for i, w := range want {
		p := got[i]
		source := location{p.Name, p.Key}.String()
		if source != w.source || p.Extension != w.extension || p.Warning != w.warning {
			t.Errorf("problem %d: got (%s, %q, warning=%v), want (%s, %q, warning=%v): %s",
				i, source, p.Extension, p.Warning, w.source, w.extension, w.warning, p.Error())
		}
		if p.Kind != gatehousev1.KindConfigMap || p.Reason != gatehousev1.ReasonInvalidExtensionConfig {
			t.Errorf("problem %d: on %s with reason %s, want a ConfigMap's with %s", i, p.Kind, p.Reason, gatehousev1.ReasonInvalidExtensionConfig)
		}
		for _, s := range w.contains {
			if !strings.Contains(p.Error(), s) {
				t.Errorf("problem %d: %q does not mention %q", i, p.Error(), s)
			}
		}
	}
}

func TestSecretsHoldOnlyWhatServedExtensionsReference(t *testing.T) {
	secrets := fixtureSecrets()
	res := Parse(Input{
		ArgoCDCM: map[string]string{settings.KeyExtensionConfig: `
extensions:
- name: served
  backend:
    services:
    - url: https://served
      headers: [{name: A, value: $some.argocd.secret.key}]
      tls: {caSecretRef: {name: backend-ca}}
- name: dropped
  backend:
    services:
    - url: https://dropped
      headers: [{name: A, value: "$ext-creds:token"}, {name: B, value: $nowhere}]
`},
		Secrets: secrets.lookup,
	})
	checkResult(t, res, secrets, "")
	want := map[string][]byte{
		"argocd-secret/some.argocd.secret.key": []byte("VALUE-some-header"),                  // trimmed, as Argo CD does
		"backend-ca/ca.crt":                    []byte(secrets["backend-ca"].data["ca.crt"]), // TLS material as written
	}
	if !reflect.DeepEqual(res.Secrets, want) {
		t.Errorf("secrets: got %q, want %q", res.Secrets, want)
	}
}

// A value that is a header cannot be a CA too (a header holds no line
// break, PEM does): the header is served, trimmed, and the CA refused, in
// either order.
func TestSecretUsedAsHeaderAndCAIsKeptTrimmed(t *testing.T) {
	secrets := fixtureSecrets()
	secrets["both"] = fakeSecret{labels: partOfArgoCD, data: map[string]string{"ca.crt": "VALUE-both\n"}}
	for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
		res := Parse(Input{
			ArgoCDCM: map[string]string{
				settings.KeyExtensionConfig + "." + order[0]: "services: [{url: https://x, headers: [{name: A, value: \"$both:ca.crt\"}]}]",
				settings.KeyExtensionConfig + "." + order[1]: "services: [{url: https://x, tls: {caSecretRef: {name: both}}}]",
			},
			Secrets: secrets.lookup,
		})
		if got := string(res.Secrets["both/ca.crt"]); got != "VALUE-both" {
			t.Errorf("order %v: got %q, want the trimmed value", order, got)
		}
		if len(res.Extensions) != 1 || res.Extensions[0].Name != order[0] || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), "is not a PEM CA bundle") {
			t.Errorf("order %v: extensions %+v, problems %v: want the header's served and the CA's refused", order, res.Extensions, res.Problems)
		}
	}
}

func TestParseIsDeterministic(t *testing.T) {
	in := Input{
		ArgoCDCM: map[string]string{
			settings.KeyExtensionConfig: `
extensions:
- {name: z, backend: {services: [{url: http://z}]}}
- {name: a, typo: 1, backend: {services: [{url: http://a, headers: [{name: X, value: $some.argocd.secret.key}]}]}}
- {name: dup, backend: {services: [{url: http://d}]}}
- {name: dup, backend: {services: [{url: http://d}]}}
- {name: m, backend: {services: [{url: ftp://m}]}}
`,
			settings.KeyExtensionConfig + ".k1": "services: [{url: http://k1}]",
			settings.KeyExtensionConfig + ".k2": "services: [{url: http://k2, oops: true}]",
			settings.KeyExtensionConfig + ".k3": "services: [",
		},
		Gatehouse: map[string]string{
			settings.KeyExtensionConfig + ".g1": "services: [{url: https://g1, tls: {caSecretRef: {name: backend-ca}}}]",
			"stray":                             "x",
		},
		Secrets: fixtureSecrets().lookup,
	}
	first := Parse(in)
	if len(first.Extensions) == 0 || len(first.Problems) < 4 {
		t.Fatalf("the input should give extensions and problems, got %+v", first)
	}
	for range 20 {
		if got := Parse(in); !reflect.DeepEqual(got, first) {
			t.Fatalf("Parse is not deterministic:\n%+v\n%+v", got, first)
		}
	}
}

func TestProblemError(t *testing.T) {
	main := location{settings.ArgoCDConfigMap, settings.KeyExtensionConfig}
	tests := []struct {
		at        location
		extension string
		warning   bool
		err       error
		want      string
	}{
		{main, "", false, errors.New("bad"), `ConfigMap argocd-cm key "extension.config": bad`},
		{main, "x", false, errors.New("bad"), `ConfigMap argocd-cm key "extension.config": extension "x": bad`},
		{main, "x", true, errors.New("odd"), `ConfigMap argocd-cm key "extension.config": extension "x": warning: odd`},
		{location{configMap: settings.ArgoCDConfigMap}, "x", false, errors.New("twice"), `ConfigMap argocd-cm: extension "x": twice`},
	}
	for _, tt := range tests {
		p := &parser{}
		p.report(tt.at, tt.extension, tt.warning, tt.err)
		if got := p.problems[0].Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	inner := errors.New("inner")
	p := &parser{}
	p.report(main, "", false, inner)
	if !errors.Is(p.problems[0], inner) {
		t.Error("the problem does not unwrap to its error")
	}
}

func TestNilSecretLookupIsAbsentSecrets(t *testing.T) {
	res := Parse(Input{ArgoCDCM: map[string]string{settings.KeyExtensionConfig + ".h": "services: [{url: http://h, headers: [{name: A, value: $k}]}]"}})
	checkProblems(t, res.Problems, []want{{argoSrc(settings.KeyExtensionConfig + ".h"), "h", false, []string{`Secret "argocd-secret" does not exist`}}})
}
