package extconfig

import (
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
)

// FuzzParse feeds arbitrary ConfigMap text to every place Parse reads it
// from: Parse must not panic, must be deterministic, and must return only
// extensions that validate against exactly the secrets it returns.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		docAllSettings, docPerExtensionKey, docMultiBackendAsWritten, docMultiBackendFixed,
		docAuthorizationHeader, docProposalSingle,
		"",
		"extensions: []",
		"extensions: [{name: a, backend: {services: [{urls: [https://a, https://b], tls: {caSecretRef: {name: backend-ca}, clientCertSecretRef: {name: client-cert}}}]}}]",
		"extensions: [{name: a, system: true, requestTimeout: 1m, limits: {perUser: {requestsPerSecond: 1, burst: 2}, maxConcurrent: 3}, backend: {services: [{url: http://a, headers: [{name: A, value: \"$ext-creds:token\"}]}]}}]",
		"services: [{url: http://a, clusterName: x}, {url: http://b, cluster: {server: https://b}}]",
		"extensions: [{name: a}, {name: a}, 1, null, {name: \"\"}]",
		"- a\n- b",
		"extensions: {name: a}",
		"a: &a [*a, *a]",
	} {
		f.Add(seed)
	}
	secrets := fixtureSecrets()
	f.Fuzz(func(t *testing.T, text string) {
		for _, in := range []Input{
			{ArgoCDCM: map[string]string{settings.KeyExtensionConfig: text}},
			{ArgoCDCM: map[string]string{settings.KeyExtensionConfig + ".fuzz": text}},
			{Gatehouse: map[string]string{settings.KeyExtensionConfig: text}, ArgoCDCM: map[string]string{settings.KeyExtensionConfig + ".fuzz": text}},
		} {
			in.Secrets = secrets.lookup
			res := Parse(in)
			checkResult(t, res, secrets, text)
			if again := Parse(in); !reflect.DeepEqual(again, res) {
				t.Fatalf("Parse is not deterministic for %q", text)
			}
		}
	})
}
