package casbindiff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
)

// extTricky is a hand-written argocd-cm and what each side makes of it.
type extTricky struct {
	name string
	cm   map[string]string
	// argo: Argo CD accepts the whole config; served: the extensions
	// Gatehouse serves.
	argo   bool
	served []string
}

func keyed(name, value string) map[string]string {
	return map[string]string{settings.KeyExtensionConfig + "." + name: value}
}

func list(value string) map[string]string {
	return map[string]string{settings.KeyExtensionConfig: value}
}

func one(url string) string { return "services:\n- url: " + url + "\n" }

var extTrickyCases = []extTricky{
	{name: "Argo CD's documented example", argo: true, served: []string{"httpbin"}, cm: list(`extensions:
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
        value: '$token'
      cluster:
        name: some-cluster
        server: https://some-cluster
`)},
	{name: "one name in the list and in its own key", argo: false, cm: map[string]string{
		settings.KeyExtensionConfig:            "extensions:\n- name: a\n  backend:\n    " + strings.ReplaceAll(one("http://a"), "\n", "\n    "),
		settings.KeyExtensionConfig + ".a":     one("http://b"),
		settings.KeyExtensionConfig + ".other": one("http://c"),
	}, served: []string{"other"}},
	{name: "a name with a dot", cm: keyed("a.b", one("http://a"))},
	{name: "a name with a space in the list", cm: list("extensions:\n- name: a b\n  backend: {services: [{url: 'http://a'}]}\n- name: ok\n  backend: {services: [{url: 'http://a'}]}\n"), served: []string{"ok"}},
	{name: "no url", cm: keyed("a", "services:\n- headers: [{name: a, value: b}]\n")},
	{name: "an empty url", cm: keyed("a", one("''"))},
	{name: "urls, Gatehouse's, which Argo CD does not read", cm: keyed("a", "services:\n- urls: [http://a, http://b]\n")},
	{name: "two services, one without a cluster", cm: keyed("a", "services:\n- url: http://a\n- url: http://b\n  cluster: {name: prod}\n")},
	{name: "two services with clusterName, the proposal's", cm: keyed("a", "services:\n- url: http://a\n  clusterName: prod\n- url: http://b\n  clusterName: staging\n")},
	{name: "a cluster with neither name nor server", cm: keyed("a", "services:\n- url: http://a\n  cluster: {}\n")},
	{name: "a lone service's cluster is ignored", argo: true, served: []string{"a"}, cm: keyed("a", "services:\n- url: http://a\n  cluster: {name: prod}\n")},
	{name: "two services, by name and by server", argo: true, served: []string{"a"}, cm: keyed("a", "services:\n- url: http://a\n  cluster: {name: prod}\n- url: http://b\n  cluster: {server: https://staging}\n")},
	{name: "two services sharing a cluster name", cm: keyed("a", "services:\n- url: http://a\n  cluster: {name: prod}\n- url: http://b\n  cluster: {name: prod, server: https://prod}\n")},
	{name: "two services sharing a server", cm: keyed("a", "services:\n- url: http://a\n  cluster: {server: https://prod}\n- url: http://b\n  cluster: {name: other, server: https://prod}\n")},
	{name: "a header without a name", cm: keyed("a", one("http://a")+"  headers: [{value: x}]\n")},
	{name: "a header without a value", cm: keyed("a", one("http://a")+"  headers: [{name: x}]\n")},
	{name: "a header from a Secret key that is blank", cm: keyed("a", one("http://a")+"  headers: [{name: x, value: $blank}]\n")},
	{name: "a secret header, trimmed", argo: true, served: []string{"a"}, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: $spaced}, {name: z, value: '$ext-creds:token'}]\n")},
	{name: "a missing key is a literal in Argo CD", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: $missing}]\n")},
	{name: "a key of an unlabelled Secret", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: '$plain:token'}]\n")},
	{name: "a repository Secret's key", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: '$repo-creds:password'}]\n")},
	{name: "a cluster Secret's key (Argo CD does not read those)", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: '$cluster-prod:token'}]\n")},
	{name: "the signing key", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: $server.secretkey}]\n")},
	{name: "a reference in the url", argo: true, cm: keyed("a", one("$url"))},
	{name: "a reference in a cluster", argo: true, cm: keyed("a", "services:\n- url: http://a\n  cluster: {name: $cluster}\n- url: http://b\n  cluster: {server: https://b}\n")},
	{name: "a reference in a header name", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: $name, value: x}]\n")},
	{name: "a reference in a name", argo: true, cm: list("extensions:\n- name: $name\n  backend: {services: [{url: 'http://a'}]}\n")},
	{name: "URL: is not url:", cm: keyed("a", "services:\n- URL: http://a\n")},
	{name: "an unknown field", argo: true, served: []string{"a"}, cm: keyed("a", one("http://a")+"  colour: blue\n")},
	{name: "a duration without a unit (Argo CD ignores it)", argo: true, cm: keyed("a", "connectionTimeout: 2\n"+one("http://a"))},
	{name: "a negative duration (Argo CD ignores it)", argo: true, cm: keyed("a", "keepAlive: -1s\n"+one("http://a"))},
	{name: "a duration (Argo CD ignores it)", argo: true, served: []string{"a"}, cm: keyed("a", "idleConnectionTimeout: 5s\n"+one("http://a"))},
	{name: "proxyconfig, which Argo CD reads by accident", argo: true, cm: keyed("a", "proxyconfig: {connectionTimeout: 5s}\n"+one("http://a"))},
	{name: "an anchor", argo: true, served: []string{"a", "b"}, cm: list(`extensions:
- name: a
  backend:
    services:
    - &svc
      url: http://a
      headers: [{name: x, value: v}]
- name: b
  backend:
    services:
    - *svc
`)},
	{name: "a merge key overridden", argo: true, cm: list(`extensions:
- name: a
  backend:
    services:
    - &svc
      url: http://a
      headers: [{name: x, value: v}]
- name: b
  backend:
    services:
    - <<: *svc
      url: http://b
`)},
	{name: "a key given twice", cm: keyed("a", one("http://a")+one("http://b"))},
	{name: "an empty value", cm: keyed("a", "")},
	{name: "an empty list", argo: true, cm: list("")},
	{name: "extension.config. is the list to Argo CD", argo: true, cm: map[string]string{settings.KeyExtensionConfig + ".": "extensions:\n- name: a\n  backend: {services: [{url: 'http://a'}]}\n"}},
	{name: "extension.configa is extension a to Argo CD", argo: true, cm: map[string]string{settings.KeyExtensionConfig + "a": one("http://a")}},
	{name: "extension.config..a", cm: map[string]string{settings.KeyExtensionConfig + "..a": one("http://a")}},
	{name: "a url with a path, a query and a fragment", argo: true, served: []string{"a"}, cm: keyed("a", one("'HTTP://Host:80/base?q=1#f'"))},
	{name: "a url without a host", argo: true, cm: keyed("a", one("foo"))},
	{name: "a url that does not parse", cm: keyed("a", one("'http://[::1'"))},
	{name: "a number as a name and as a value", argo: true, cm: list("extensions:\n- name: 123\n  backend: {services: [{url: 'http://a', headers: [{name: x, value: 0x10}]}]}\n")},
	{name: "yes is text to Argo CD", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: x, value: yes}]\n")},
	{name: "one header name twice", argo: true, served: []string{"a"}, cm: keyed("a", one("http://a")+"  headers: [{name: x-a, value: '1'}, {name: X-A, value: '2'}]\n")},
	{name: "headers Gatehouse sets itself", argo: true, served: []string{"a"}, cm: keyed("a", one("http://a")+"  headers: [{name: Argocd-Username, value: root}, {name: Connection, value: close}]\n")},
	{name: "a header name with a space", argo: true, cm: keyed("a", one("http://a")+"  headers: [{name: 'x y', value: z}]\n")},
	{name: "enabled: false", argo: true, cm: keyed("a", "enabled: false\n"+one("http://a"))},
	{name: "a second YAML document", argo: true, served: []string{"a"}, cm: keyed("a", one("http://a")+"---\nservices: []\n")},
	{name: "a list that is not a list", cm: list("extensions: {name: a}\n")},
	{name: "credentials in the url", argo: true, cm: keyed("a", one("http://user:pw@a"))},
}

// TestTrickyExtensionConfigsAgreeWithArgoCD holds extconfig.Parse to Argo
// CD's reading of argocd-cm on hand-written cases, each pinned.
func TestTrickyExtensionConfigsAgreeWithArgoCD(t *testing.T) {
	o := argoCD(t)
	cms := make([]map[string]string, len(extTrickyCases))
	for i, c := range extTrickyCases {
		cms[i] = c.cm
	}
	answers := askExtConfigs(t, o, cms)
	var total extOutcome
	for i, c := range extTrickyCases {
		t.Run(c.name, func(t *testing.T) {
			ans := answers[i]
			total.add(compareExt(t, c.cm, ans))
			if got := ans.Error == ""; got != c.argo {
				t.Errorf("Argo CD accepts: %v, want %v (%s)", got, c.argo, ans.Error)
			}
			res := extconfig.Parse(extconfig.Input{ArgoCDCM: c.cm, Secrets: extLookup})
			var served []string
			for _, e := range res.Extensions {
				served = append(served, e.Name)
			}
			if !slices.Equal(served, c.served) {
				t.Errorf("Gatehouse serves %q, want %q\nproblems:\n%s", served, c.served, describeProblems(res.Problems))
			}
		})
	}
	logExceptions(t, total)
}

func logExceptions(t *testing.T, o extOutcome) {
	t.Helper()
	var b strings.Builder
	for _, x := range exceptions {
		if n := o.exceptions[x.name]; n > 0 {
			fmt.Fprintf(&b, "; %s: %d", x.name, n)
		}
	}
	t.Logf("%d configs, %d accepted by Argo CD, %d extensions served by Gatehouse; exceptions met%s", o.configs, o.argoAccepts, o.served, b.String())
}

// TestRandomExtensionConfigsAgreeWithArgoCD compares random argocd-cm
// extension settings built from the pieces that matter: names good and
// bad, every reference form, cluster selections that collide, headers,
// transport settings, the keys Argo CD reads oddly, Gatehouse's own
// fields. GATEHOUSE_CASBINDIFF_SEED and _N as for the policies.
func TestRandomExtensionConfigsAgreeWithArgoCD(t *testing.T) {
	rng, seed, n := randomRun(t, 2000, "extension configs")
	o := argoCD(t)
	var total extOutcome
	const batch = 250
	for start := 0; start < n && !t.Failed(); start += batch {
		var cms []map[string]string
		for i := start; i < min(n, start+batch); i++ {
			cms = append(cms, randomExtConfig(rng))
		}
		answers := askExtConfigs(t, o, cms)
		for i, cm := range cms {
			t.Run(strconv.Itoa(start+i), func(t *testing.T) {
				total.add(compareExt(t, cm, answers[i]))
			})
			if t.Failed() {
				t.Fatalf("seed %d: config %d fails; GATEHOUSE_CASBINDIFF_SEED=%d reproduces it", seed, start+i, seed)
			}
		}
	}
	logExceptions(t, total)
}

// y is YAML in flow style: an ordered mapping; a value is a raw scalar, a
// string (written quoted), a y, or a list of those.
type y []kv

type kv struct {
	k string
	v any
}

type raw string

func (m y) String() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.k + ": " + flow(e.v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func flow(v any) string {
	switch v := v.(type) {
	case raw:
		return string(v)
	case string:
		return strconv.Quote(v)
	case y:
		return v.String()
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = flow(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("flow: %T", v))
}

// chance is true one time in n.
func chance(rng *rand.Rand, n int) bool { return rng.IntN(n) == 0 }

var (
	extNames = []any{"metrics", "metrics", "logs", "httpbin", "a_b-1", "bad name", "bad.name", "", "$name", "$missing", raw("123"), "Metrics"}
	extURLs  = []any{"http://a:8080", "http://a:8080", "https://b.example", "http://c/base", "http://d?q=1", "http://e#f", "HTTP://G", "ftp://h",
		"foo", "", "$url", "$missing", "http://user:pw@i", "http://[::1", "http://", raw("8080")}
	clusterNames   = []any{"prod", "staging", "in-cluster", "", "$cluster", raw("1")}
	clusterServers = []any{"https://prod", "https://staging", "https://kubernetes.default.svc", "", "$url"}
	headerNames    = []any{"Authorization", "X-Token", "x-token", "Argocd-Username", "X-Forwarded-For", "Connection", "bad name", "", "$name", raw("1")}
	headerValues   = []any{"literal", "  spaced ", "$token", "$spaced", "$empty", "$blank", "$nl", "$missing", "$ext-creds:token",
		"$ext-creds:missing", "$plain:token", "$repo-creds:password", "$cluster-prod:token", "$server.secretkey", "$", "$:x", "",
		"a\nb", raw("123"), raw("yes"), raw("true"), raw("0x10"), raw("~")}
	durations = []any{"5s", "2s", "0", "0s", "1m", "-1s", "2", raw("2"), "$dur", "abc", raw("~")}
	maxIdles  = []any{raw("3"), raw("30"), raw("0"), raw("-1"), "5", raw("~")}
	// Gatehouse's own fields, which Argo CD does not read: they may make
	// Gatehouse refuse (with a Problem), never serve what Argo CD refuses.
	bools       = []any{raw("true"), raw("false"), "true", raw("yes"), raw("1"), raw("~")}
	rates       = []any{raw("10"), raw("0.5"), raw("0"), raw("-1"), "10", raw("1e9"), raw("~")}
	counts      = []any{raw("20"), raw("1"), raw("0"), raw("-3"), "20", raw("1.5"), raw("~")}
	secretNames = []any{"backend-tls", "backend-tls", "backend-tls", "ext-creds", "plain", "missing", "", "$name"}
	secretKeys  = []any{"ca.crt", "ca.crt", "token", "missing", ""}
)

// randomExtLevel adds Gatehouse's extension-level fields to e.
func randomExtLevel(rng *rand.Rand, e y) y {
	if chance(rng, 12) {
		e = append(e, kv{"system", pick(rng, bools...)})
	}
	if chance(rng, 12) {
		e = append(e, kv{"requestTimeout", pick(rng, durations...)})
	}
	if chance(rng, 10) {
		l := y{}
		for _, f := range []string{"perUser", "perExtension"} {
			if chance(rng, 2) {
				r := y{}
				if !chance(rng, 4) {
					r = append(r, kv{"requestsPerSecond", pick(rng, rates...)})
				}
				if !chance(rng, 4) {
					r = append(r, kv{"burst", pick(rng, counts...)})
				}
				l = append(l, kv{f, r})
			}
		}
		if chance(rng, 2) {
			l = append(l, kv{"maxConcurrent", pick(rng, counts...)})
		}
		if chance(rng, 15) {
			l = append(l, kv{"perUsers", raw("1")}) // a misspelt field
		}
		e = append(e, kv{"limits", l})
	}
	return e
}

// randomTLS is Gatehouse's backend TLS block of a service.
func randomTLS(rng *rand.Rand) y {
	t := y{}
	if chance(rng, 2) {
		t = append(t, kv{"caSecretRef", y{{"name", pick(rng, secretNames...)}, {"key", pick(rng, secretKeys...)}}})
	}
	if chance(rng, 3) {
		t = append(t, kv{"clientCertSecretRef", y{{"name", pick(rng, secretNames...)}}})
	}
	if chance(rng, 3) {
		t = append(t, kv{"serverName", pick(rng, "metrics.example", "", "bad name", "$name")})
	}
	if chance(rng, 4) {
		t = append(t, kv{"insecureSkipVerify", pick(rng, bools...)})
	}
	return t
}

func randomExtConfig(rng *rand.Rand) map[string]string {
	cm := map[string]string{}
	if !chance(rng, 4) {
		var entries []any
		for range rng.IntN(4) {
			e := y{}
			if !chance(rng, 12) {
				e = append(e, kv{"name", pick(rng, extNames...)})
			}
			if chance(rng, 10) {
				e = append(e, kv{"enabled", raw(pick(rng, "true", "false"))})
			}
			e = append(e, kv{"backend", randomBackend(rng)})
			entries = append(entries, randomExtLevel(rng, e))
		}
		if chance(rng, 20) {
			cm[settings.KeyExtensionConfig] = ""
		} else {
			cm[settings.KeyExtensionConfig] = y{{"extensions", entries}}.String()
		}
	}
	for range rng.IntN(3) {
		key := settings.KeyExtensionConfig + "."
		switch rng.IntN(20) {
		case 0:
			key = settings.KeyExtensionConfig // no dot
		case 1:
			key += "."
		case 2:
			key += "a.b"
		case 3:
			key = settings.KeyExtensionConfig + "." // the list, again
			if _, ok := cm[settings.KeyExtensionConfig]; ok {
				continue // which one Argo CD reads is chance
			}
			cm[key] = y{{"extensions", []any{y{{"name", "dotlist"}, {"backend", randomBackend(rng)}}}}}.String()
			continue
		}
		name := pick(rng, "metrics", "logs", "keyed", "keyed2", "x_y")
		if key == settings.KeyExtensionConfig {
			key += name
			if _, ok := cm[settings.KeyExtensionConfig+"."+name]; ok {
				continue
			}
		} else if strings.HasSuffix(key, ".") {
			key += name
			if _, ok := cm[settings.KeyExtensionConfig+name]; ok {
				continue
			}
		}
		b := randomExtLevel(rng, randomBackend(rng))
		if chance(rng, 10) {
			b = append(b, kv{"enabled", raw("false")})
		}
		if chance(rng, 30) {
			cm[key] = pick(rng, "", "- a", "services: [", "services: []")
		} else {
			cm[key] = b.String()
		}
	}
	return cm
}

func randomBackend(rng *rand.Rand) y {
	b := y{}
	for _, f := range []string{"connectionTimeout", "keepAlive", "idleConnectionTimeout", "idleConnTimeout"} {
		if chance(rng, 12) {
			b = append(b, kv{f, pick(rng, durations...)})
		}
	}
	if chance(rng, 12) {
		b = append(b, kv{"maxIdleConnections", pick(rng, maxIdles...)})
	}
	if chance(rng, 25) {
		b = append(b, kv{"proxyconfig", y{{"connectionTimeout", pick(rng, durations...)}}})
	}
	n := pick(rng, 0, 1, 1, 1, 2, 2, 3)
	var services []any
	clustered := n > 1 || chance(rng, 3)
	for range n {
		s := y{}
		switch rng.IntN(20) {
		case 0: // none
		case 1:
			s = append(s, kv{"urls", []any{pick(rng, extURLs...)}})
		case 2:
			s = append(s, kv{"URL", pick(rng, extURLs...)})
		default:
			s = append(s, kv{"url", pick(rng, extURLs...)})
		}
		if clustered && !chance(rng, 8) {
			c := y{}
			if !chance(rng, 3) {
				c = append(c, kv{"name", pick(rng, clusterNames...)})
			}
			if !chance(rng, 3) {
				c = append(c, kv{"server", pick(rng, clusterServers...)})
			}
			s = append(s, kv{"cluster", c})
		} else if chance(rng, 15) {
			s = append(s, kv{"clusterName", pick(rng, clusterNames...)})
		}
		var hs []any
		for range pick(rng, 0, 0, 1, 1, 2, 3) {
			h := y{}
			if !chance(rng, 15) {
				h = append(h, kv{"name", pick(rng, headerNames...)})
			}
			if !chance(rng, 15) {
				h = append(h, kv{"value", pick(rng, headerValues...)})
			}
			hs = append(hs, h)
		}
		if hs != nil {
			s = append(s, kv{"headers", hs})
		}
		if chance(rng, 10) {
			s = append(s, kv{"tls", randomTLS(rng)})
		}
		services = append(services, s)
	}
	if n > 0 || chance(rng, 2) {
		b = append(b, kv{"services", services})
	}
	return b
}
