package extconfig

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

type fakeSecret struct {
	data   map[string]string
	labels map[string]string
}

type secretStore map[string]fakeSecret

func (s secretStore) lookup(name string) (map[string][]byte, map[string]string, bool) {
	sec, ok := s[name]
	if !ok {
		return nil, nil, false
	}
	data := make(map[string][]byte, len(sec.data))
	for k, v := range sec.data {
		data[k] = []byte(v)
	}
	return data, sec.labels, true
}

var partOfArgoCD = map[string]string{settings.LabelPartOf: "argocd"}

// testCert is a CA certificate, and a certificate and its key it issued,
// PEM-encoded, made once for the fixture's TLS Secrets.
var testCert = sync.OnceValues(func() (caPEM string, pair [2]string) {
	ca, err := testkit.NewCA("backend")
	if err != nil {
		panic(err)
	}
	cert, key, err := ca.Serving()
	if err != nil {
		panic(err)
	}
	return string(ca.PEM), [2]string{string(cert), string(key)}
})

// The values are distinctive so tests can prove they never reach a message;
// TLS material is PEM with the distinctive text before its block, which PEM
// readers skip.
func fixtureSecrets() secretStore {
	ca, pair := testCert()
	cert, key := pair[0], pair[1]
	return secretStore{
		settings.ArgoCDSecret: {labels: partOfArgoCD, data: map[string]string{
			"server.secretkey":                    "VALUE-signing-key",
			"admin.password":                      "VALUE-admin-password",
			"some.argocd.secret.key":              "VALUE-some-header\n",
			"some-extension.authorization.header": "Bearer VALUE-auth",
			"multi.line":                          "VALUE-a\nVALUE-b",
			"blank":                               " \n",
		}},
		"ext-creds": {labels: partOfArgoCD, data: map[string]string{
			"token": "VALUE-ext-token", "unused": "VALUE-unused",
		}},
		"unlabelled": {data: map[string]string{"token": "VALUE-unlabelled"}},
		"backend-ca": {data: map[string]string{
			"ca.crt": "VALUE-ca-pem\n" + ca, "other.pem": "VALUE-other-pem\n" + ca, "unused": "VALUE-unused-ca",
		}},
		"client-cert": {data: map[string]string{"tls.crt": "VALUE-client-crt\n" + cert, "tls.key": "VALUE-client-key\n" + key}},
		"not-pem":     {data: map[string]string{"ca.crt": "VALUE-not-pem", "tls.crt": "VALUE-not-pem-crt", "tls.key": "VALUE-not-pem-key"}},
		"key-as-ca":   {data: map[string]string{"ca.crt": "VALUE-key-as-ca\n" + key}},
		"wrong-key":   {data: map[string]string{"tls.crt": "VALUE-wrong-key-crt\n" + cert, "tls.key": "VALUE-wrong-key\n" + otherKey()}},
		"half-cert":   {data: map[string]string{"tls.crt": "VALUE-half-crt"}},
		"cluster-prod": {
			labels: map[string]string{settings.LabelPartOf: "argocd", settings.LabelSecretType: "cluster"},
			data:   map[string]string{"name": "prod", "server": "https://prod", "config": "VALUE-cluster-creds"},
		},
	}
}

// otherKey is a private key that matches no certificate of the fixture.
func otherKey() string {
	ca, err := testkit.NewCA("other")
	if err != nil {
		panic(err)
	}
	_, key, err := ca.Serving()
	if err != nil {
		panic(err)
	}
	return string(key)
}

// secretValues are every value in the fixture, to prove none reaches a
// Problem.
func secretValues(s secretStore) []string {
	var out []string
	for _, sec := range s {
		for _, v := range sec.data {
			if strings.HasPrefix(v, "VALUE-") || strings.Contains(v, "VALUE-") {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

// checkResult checks the invariants every Result must hold, whatever the
// input: valid, sorted, unique extensions; exactly the referenced secrets;
// no secret value in a message.
func checkResult(t *testing.T, res Result, secrets secretStore, input string) {
	t.Helper()
	referenced := map[string]bool{}
	for i, e := range res.Extensions {
		if i > 0 && res.Extensions[i-1].Name >= e.Name {
			t.Errorf("extensions not sorted or not unique: %q then %q", res.Extensions[i-1].Name, e.Name)
		}
		if !extensionName.MatchString(e.Name) {
			t.Errorf("extension %q has an invalid name", e.Name)
		}
		if errs := e.Validate(res.Secrets); len(errs) > 0 {
			t.Errorf("extension %q does not validate: %v", e.Name, errs)
		}
		for _, s := range e.Backend.Services {
			for _, h := range s.Headers {
				if h.Secret != nil {
					referenced[h.Secret.Path] = true
				}
			}
			if s.TLS != nil {
				for _, r := range []*snapshot.SecretRef{s.TLS.CA, s.TLS.ClientCert, s.TLS.ClientKey} {
					if r != nil {
						referenced[r.Path] = true
					}
				}
			}
		}
	}
	for path := range res.Secrets {
		if !referenced[path] {
			t.Errorf("Result.Secrets holds %q, which no served extension references", path)
		}
	}
	for i, p := range res.Problems {
		if i > 0 && compareProblems(res.Problems[i-1], p) > 0 {
			t.Errorf("problems not sorted: %v before %v", res.Problems[i-1], p)
		}
		msg := p.Error()
		for _, v := range secretValues(secrets) {
			if strings.Contains(msg, v) && !strings.Contains(input, v) {
				t.Errorf("problem discloses a secret value: %s", msg)
			}
		}
	}
}
