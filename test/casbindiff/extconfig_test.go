package casbindiff

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The extension config rule (extconfig.Parse of argocd-cm against what
// argocd-server's settings manager and extension manager make of it):
//
//   - Argo CD accepts the config: Gatehouse serves every extension, with
//     the same registry keys (cluster selection), target scheme and host,
//     headers and transport settings, except where one of the exceptions
//     below applies, and then a Problem of that extension says so.
//   - Argo CD refuses a definition on its own: Gatehouse does not serve it
//     and a Problem names it. (Argo CD then serves no extension at all;
//     Gatehouse serves the others, on purpose.)
//   - Gatehouse never serves an extension, registry key, URL or header
//     Argo CD would not.

// exception is a deliberate difference: Gatehouse refuses (or, for a
// warning, serves differently) what Argo CD accepts. Each is named in the
// Problem Gatehouse reports, which the pattern matches.
type exception struct {
	name, why string
	warning   bool
	pattern   *regexp.Regexp
}

var exceptions = []exception{
	{name: "unresolved reference", why: "Argo CD sends an unresolved \"$key\" as the literal header value; Gatehouse drops the extension until the Secret and key exist (fail closed)",
		pattern: regexp.MustCompile(`does not exist in the Argo CD namespace|has no key|lacks the label|names no secret key`)},
	{name: "credentials never forwarded", why: "argocd-secret's server.secretkey and the values of repository Secrets are Argo CD's own credentials; Gatehouse never sends them to a backend",
		pattern: regexp.MustCompile(`signs Argo CD's session tokens|holds Argo CD \w+ credentials`)},
	{name: "reference outside a header value", why: "Argo CD replaces \"$key\" in every text field (name, url, cluster, header name, durations); Gatehouse reads references only in header values and drops the extension, so no Secret decides where requests go",
		pattern: regexp.MustCompile(`a "\$" reference is read only in a header value`)},
	{name: "unquoted scalar", why: "Argo CD turns a number, true/false or a date where text belongs into text, rewriting some (0x10 becomes 16); Gatehouse asks for quotes",
		pattern: regexp.MustCompile(`want a string, not .*: quote the value`)},
	{name: "backend URL", why: "Argo CD accepts any URL that parses, and every request to one without an http(s) scheme and a host fails; Gatehouse refuses it, and credentials in it",
		pattern: regexp.MustCompile(`url ".*": (the scheme must be http or https|the host is missing)|holds credentials`)},
	{name: "header name", why: "a header name that is not an HTTP token makes Go refuse every request in Argo CD; Gatehouse refuses the config",
		pattern: regexp.MustCompile(`not a valid header name`)},
	{name: "header value", why: "a value with a line break or NUL cannot be sent as is (Go rewrites line breaks as spaces); Gatehouse refuses it",
		pattern: regexp.MustCompile(`holds a line break or NUL|the value holds a line break`)},
	{name: "transport setting", why: "Argo CD 3.5.0 never reads a backend's connectionTimeout, keepAlive, idleConnectionTimeout or maxIdleConnections (its BackendConfig embeds ProxyConfig without yaml inline, so it reads them under an undocumented \"proxyconfig\"); Gatehouse refuses what it cannot apply",
		pattern: regexp.MustCompile(`(connectionTimeout|keepAlive|idleConnectionTimeout|idleConnTimeout|maxIdleConnections).*(duration|negative)|maxIdleConnections is negative|maxIdleConnections: want a whole number`)},
	{name: "proxyconfig", why: "Argo CD 3.5.0 reads transport settings under \"proxyconfig\" (an accident of its types) and may refuse the config over them; Gatehouse does not read them there, so it refuses the extension rather than serve what Argo CD may refuse",
		pattern: regexp.MustCompile(`"(backend\.)?proxyconfig": Argo CD 3\.5 reads its transport settings there`)},
	{name: "key without a dot", why: "Argo CD reads \"extension.config<name>\" as extension <name>; Gatehouse drops it and says to add the dot",
		pattern: regexp.MustCompile(`key "extension\.config[^."][^"]*" is extension ".*" to Argo CD`)},
	{name: "second list key", why: "Argo CD reads \"extension.config.\" as the list, instead of \"extension.config\" when both exist (which one is chance); Gatehouse refuses the key",
		pattern: regexp.MustCompile(`key "extension\.config\." is the list to Argo CD`)},
	{name: "Gatehouse's own fields", why: "fields Argo CD does not read (urls, clusterName, system, limits, tls, requestTimeout, enabled) are Gatehouse's; where they conflict or are invalid, Gatehouse refuses the extension",
		pattern: regexp.MustCompile(`give url \(one backend\) or urls|give cluster \(Argo CD's form\) or clusterName|idleConnTimeout \(the proposal's name\) and|a system extension serves no Application|caSecretRef|clientCertSecretRef|limits:|requestTimeout` +
			`|: (system|(backend\.)?(services\.)?tls\.\w+|limits\.[\w.]+): want `)},
	{name: "merge key overridden", why: "Gatehouse's YAML reader (sigs.k8s.io/yaml, strict) counts a key that overrides one a merge key (<<: *anchor) brought in as a key given twice; Argo CD's (go.yaml.in/yaml/v3) lets it override. The whole key is refused and its last good config stays",
		pattern: regexp.MustCompile(`(?s)the YAML does not parse \(.*key ".*" already set in map`)},
	// Warnings: served, but not as Argo CD serves it.
	{name: "enabled: false", warning: true, why: "the proposal's enabled: false leaves the extension out; Argo CD ignores the field",
		pattern: regexp.MustCompile(`enabled: false: not served`)},
	{name: "path kept", warning: true, why: "Gatehouse keeps a service URL's path (issue 14: Argo CD dropping it is one of the flaws Gatehouse fixes); the same host is reached, below the path the admin wrote",
		pattern: regexp.MustCompile(`Gatehouse keeps its path`)},
	{name: "transport settings applied", warning: true, why: "Gatehouse applies a backend's transport settings as Argo CD's documentation describes them; Argo CD 3.5.0 ignores them and uses its defaults; these settings never widen what is served",
		pattern: regexp.MustCompile(`Argo CD 3\.5 ignores it`)},
}

// proxy defaults where the snapshot leaves a setting out: Argo CD's
// (proxy/transport.go); maxIdleConnections is per backend host there.
const (
	defaultConnectionTimeout = 2 * time.Second
	defaultKeepAlive         = 15 * time.Second
	defaultIdleTimeout       = 60 * time.Second
	argoMaxIdle              = 30
)

// extFixture is every Secret of the control-plane namespace, as both sides
// see them.
var extFixture = []argoSecret{
	{Name: settings.ArgoCDSecret, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}, Data: map[string]string{
		"server.secretkey": "signing-key", "token": "s3cr3t", "spaced": "  padded \n", "empty": "", "blank": " \n",
		"nl": "a\nb", "url": "http://from-secret:8080", "dur": "5s", "name": "fromsecret", "cluster": "prod",
	}},
	{Name: "ext-creds", Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}, Data: map[string]string{"token": "ext-token"}},
	{Name: "plain", Data: map[string]string{"token": "plain-token"}},
	{Name: "repo-creds", Labels: map[string]string{"app.kubernetes.io/part-of": "argocd", "argocd.argoproj.io/secret-type": "repository"},
		Data: map[string]string{"password": "repo-pass"}},
	{Name: "cluster-prod", Labels: map[string]string{"app.kubernetes.io/part-of": "argocd", "argocd.argoproj.io/secret-type": "cluster"},
		Data: map[string]string{"token": "cluster-token"}},
	backendTLSSecret(),
}

// backendTLSSecret holds a CA and a client certificate, so that a
// Gatehouse tls block naming it is valid and the extension served (Argo CD
// reads no tls block: the comparison covers everything else about it).
func backendTLSSecret() argoSecret {
	ca, err := testkit.NewCA("casbindiff backends")
	if err != nil {
		panic(err)
	}
	cert, key, err := ca.Client("gatehouse-proxy")
	if err != nil {
		panic(err)
	}
	return argoSecret{Name: "backend-tls", Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"},
		Data: map[string]string{"ca.crt": string(ca.PEM), "tls.crt": string(cert), "tls.key": string(key)}}
}

func extLookup(name string) (map[string][]byte, map[string]string, bool) {
	for _, s := range extFixture {
		if s.Name == name {
			data := map[string][]byte{}
			for k, v := range s.Data {
				data[k] = []byte(v)
			}
			return data, s.Labels, true
		}
	}
	return nil, nil, false
}

// extOutcome counts what the comparisons met.
type extOutcome struct {
	configs, argoAccepts, served int
	exceptions                   map[string]int
}

func (o *extOutcome) add(p extOutcome) {
	o.configs += p.configs
	o.argoAccepts += p.argoAccepts
	o.served += p.served
	if o.exceptions == nil {
		o.exceptions = map[string]int{}
	}
	for k, v := range p.exceptions {
		o.exceptions[k] += v
	}
}

// askExtConfigs asks Argo CD about many configs in one message: it reads
// each with its own settings manager, all at once.
func askExtConfigs(t *testing.T, o *oracle, cms []map[string]string) []argoExtAnswer {
	t.Helper()
	c := argoCase{Namespace: controlPlane}
	for _, cm := range cms {
		c.ExtConfigs = append(c.ExtConfigs, argoExtConfig{ArgoCDCM: cm, Secrets: extFixture})
	}
	a := o.ask(t, c)
	if len(a.ExtAnswers) != len(cms) {
		t.Fatalf("argocdref answered %d extension configs of %d", len(a.ExtAnswers), len(cms))
	}
	return a.ExtAnswers
}

// compareExt holds Gatehouse's parse of cm to Argo CD's answer; failures
// are reported on t.
func compareExt(t *testing.T, cm map[string]string, ans argoExtAnswer) extOutcome {
	t.Helper()
	res := extconfig.Parse(extconfig.Input{ArgoCDCM: cm, Secrets: extLookup})
	out := extOutcome{configs: 1, exceptions: map[string]int{}}
	c := &extCompare{t: t, cm: cm, ans: ans, res: res, out: &out}
	if ans.Error == "" {
		out.argoAccepts = 1
	}
	c.servedOnlyWhatArgoServes()
	c.refusedAsArgoRefuses()
	if ans.Error == "" && !ans.Ambiguous {
		c.servesWhatArgoServes()
	}
	if t.Failed() {
		t.Logf("argocd-cm:\n%s\nArgo CD: %+v\nGatehouse problems:\n%s", describeCM(cm), ans, describeProblems(res.Problems))
	}
	out.served = len(res.Extensions)
	return out
}

type extCompare struct {
	t   *testing.T
	cm  map[string]string
	ans argoExtAnswer
	res extconfig.Result
	out *extOutcome
}

// servedOnlyWhatArgoServes: each extension Gatehouse serves is one
// definition Argo CD accepts alone, served the same.
func (c *extCompare) servedOnlyWhatArgoServes() {
	for _, g := range c.res.Extensions {
		var defs []argoEntry
		for _, e := range c.ans.Entries {
			if e.Name == g.Name {
				defs = append(defs, e)
			}
		}
		switch {
		case len(defs) == 0:
			c.t.Errorf("Gatehouse serves extension %q, which Argo CD does not define", g.Name)
			continue
		case len(defs) > 1:
			c.t.Errorf("Gatehouse serves extension %q, which Argo CD finds defined %d times (and refuses)", g.Name, len(defs))
			continue
		case defs[0].Error != "":
			c.t.Errorf("Gatehouse serves extension %q, which Argo CD refuses: %s", g.Name, defs[0].Error)
			continue
		}
		want := defs[0].Proxies
		if c.ans.Error == "" && !c.ans.Ambiguous && !slices.EqualFunc(want, c.ans.Extensions[g.Name], proxyEqual) {
			c.t.Errorf("extension %q: Argo CD registers it alone as %+v, in the whole config as %+v", g.Name, want, c.ans.Extensions[g.Name])
		}
		c.sameProxies(g, want)
	}
}

func proxyEqual(a, b argoProxy) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// sameProxies compares what Gatehouse serves for g with Argo CD's registry
// entries for it.
func (c *extCompare) sameProxies(g snapshot.Extension, argo []argoProxy) {
	ours, err := asArgoProxies(g, c.res.Secrets)
	if err != nil {
		c.t.Errorf("extension %q: %v", g.Name, err)
		return
	}
	key := func(p argoProxy) string { return p.ClusterName + "\x00" + p.ClusterServer }
	if !slices.Equal(mapKeys(ours, key), mapKeys(argo, key)) {
		c.t.Errorf("extension %q: Gatehouse selects clusters %q, Argo CD %q (name, server)", g.Name, mapKeys(ours, key), mapKeys(argo, key))
		return
	}
	byKey := map[string]argoProxy{}
	for _, p := range argo {
		byKey[key(p)] = p
	}
	transportWarned := c.excepted(g.Name, true, "transport settings applied")
	for _, o := range ours {
		a := byKey[key(o)]
		where := fmt.Sprintf("extension %q cluster (%q, %q)", g.Name, o.ClusterName, o.ClusterServer)
		if o.Scheme != a.Scheme || o.Host != a.Host {
			c.t.Errorf("%s: Gatehouse sends requests to %s://%s, Argo CD to %s://%s", where, o.Scheme, o.Host, a.Scheme, a.Host)
		}
		if o.Path != "" && !c.excepted(g.Name, true, "path kept") {
			c.t.Errorf("%s: Gatehouse sends requests below the path /%s, which Argo CD drops, without a warning", where, o.Path)
		}
		if want := sentHeaders(a.Headers); !maps.Equal(sentHeaders(o.Headers), want) {
			c.t.Errorf("%s: Gatehouse sends headers %q, Argo CD %q", where, sentHeaders(o.Headers), want)
		}
		if o.ConnectionTimeout != a.ConnectionTimeout || o.KeepAlive != a.KeepAlive || o.IdleConnectionTimeout != a.IdleConnectionTimeout ||
			(o.MaxIdleConnections != 0 || a.MaxIdleConnections != argoMaxIdle) && o.MaxIdleConnections != a.MaxIdleConnections {
			if !transportWarned {
				c.t.Errorf("%s: transport settings differ without a warning: Gatehouse %v/%v/%v/%d, Argo CD %v/%v/%v/%d (connect, keep-alive, idle, max idle)", where,
					o.ConnectionTimeout, o.KeepAlive, o.IdleConnectionTimeout, o.MaxIdleConnections, a.ConnectionTimeout, a.KeepAlive, a.IdleConnectionTimeout, a.MaxIdleConnections)
			}
		}
	}
}

func mapKeys[T any](s []T, key func(T) string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		out = append(out, key(v))
	}
	slices.Sort(out)
	return out
}

// sentHeaders are Argo CD's configured headers that reach the backend
// through Gatehouse's rules: the proxy alone sets Argocd-* and
// X-Forwarded-*, and hop-by-hop headers never pass (Argo CD's
// ReverseProxy drops those too).
func sentHeaders(h map[string][]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if headers.Allowed(k, v[len(v)-1]) {
			out[k] = v[len(v)-1]
		}
	}
	return out
}

// asArgoProxies keys g's services as Argo CD's appendProxy does: a lone
// service under the extension alone, others under their cluster's name,
// server, and both.
func asArgoProxies(g snapshot.Extension, secrets map[string][]byte) ([]argoProxy, error) {
	b := g.Backend
	var out []argoProxy
	for _, s := range b.Services {
		if len(s.URLs) != 1 {
			return nil, fmt.Errorf("a service with %d URLs", len(s.URLs))
		}
		u, err := url.Parse(s.URLs[0])
		if err != nil {
			return nil, err
		}
		p := argoProxy{Scheme: u.Scheme, Host: u.Host, Path: strings.Trim(u.Path, "/"),
			ConnectionTimeout:     cmp.Or(b.ConnectionTimeout.Std(), defaultConnectionTimeout),
			KeepAlive:             cmp.Or(b.KeepAlive.Std(), defaultKeepAlive),
			IdleConnectionTimeout: cmp.Or(b.IdleConnectionTimeout.Std(), defaultIdleTimeout),
			MaxIdleConnections:    b.MaxIdleConnections,
		}
		// The path is the one deliberate difference in the target:
		// Gatehouse keeps it (issue 14), Argo CD drops it, and the
		// extension says so in a warning (checked with the cases).
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("service URL %q has a query or fragment, which Argo CD ignores", s.URLs[0])
		}
		hdr := http.Header{}
		for _, h := range s.Headers {
			v := h.Value
			if h.Secret != nil {
				v = strings.TrimRight(string(secrets[h.Secret.Path]), "\r\n")
			}
			if headers.Allowed(http.CanonicalHeaderKey(h.Name), v) {
				hdr.Set(h.Name, v)
			}
		}
		if len(hdr) > 0 {
			p.Headers = hdr
		}
		switch cl := s.Cluster; {
		case len(b.Services) == 1:
			if cl != nil {
				return nil, fmt.Errorf("a lone service with a cluster, which Argo CD ignores")
			}
			out = append(out, p)
		case cl == nil:
			return nil, fmt.Errorf("a default service among %d, which Argo CD refuses", len(b.Services))
		default:
			add := func(name, server string) {
				q := p
				q.ClusterName, q.ClusterServer = name, server
				out = append(out, q)
			}
			if cl.Name != "" {
				add(cl.Name, "")
			}
			if cl.Server != "" {
				add("", cl.Server)
			}
			if cl.Name != "" && cl.Server != "" {
				add(cl.Name, cl.Server)
			}
		}
	}
	return out, nil
}

// refusedAsArgoRefuses: each definition Argo CD refuses alone is not
// served and has a Problem.
func (c *extCompare) refusedAsArgoRefuses() {
	names := map[string]int{}
	for _, e := range c.ans.Entries {
		if e.Error == "" {
			names[e.Name]++
		}
	}
	for _, e := range c.ans.Entries {
		if e.Error == "" {
			continue
		}
		if e.Name != "" && c.serves(e.Name) && names[e.Name] == 0 {
			c.t.Errorf("Gatehouse serves extension %q, which Argo CD refuses: %s", e.Name, e.Error)
		}
		if len(c.problems(e, false)) == 0 {
			c.t.Errorf("Argo CD refuses %s (%s); Gatehouse reports no problem with it", describeEntry(e), e.Error)
		}
	}
	for name, n := range names {
		if n > 1 && c.serves(name) {
			c.t.Errorf("Gatehouse serves extension %q, which Argo CD finds defined %d times", name, n)
		}
	}
	if c.ans.Error != "" && !c.ans.Ambiguous && !c.explainsRefusal() {
		c.t.Errorf("Argo CD refuses the config (%s), and no definition alone explains it", c.ans.Error)
	}
}

// explainsRefusal: some definition is refused alone, or a name is defined
// twice.
func (c *extCompare) explainsRefusal() bool {
	seen := map[string]bool{}
	for _, e := range c.ans.Entries {
		if e.Error != "" || seen[e.Name] {
			return true
		}
		seen[e.Name] = true
	}
	return false
}

// servesWhatArgoServes: every extension Argo CD registers is served, or
// Gatehouse says why not with an exception's Problem.
func (c *extCompare) servesWhatArgoServes() {
	for _, e := range c.ans.Entries {
		if c.serves(e.Name) {
			continue
		}
		errs := c.problems(e, false)
		if len(errs) == 0 && !c.excepted(e.Name, true, "enabled: false") {
			c.t.Errorf("Argo CD serves %s; Gatehouse does not, and says nothing", describeEntry(e))
			continue
		}
		for _, p := range errs {
			if x := exceptionOf(p); x == "" {
				c.t.Errorf("Argo CD serves %s; Gatehouse refuses it for no listed reason: %v", describeEntry(e), p)
			} else {
				c.out.exceptions[x]++
			}
		}
	}
}

func exceptionOf(p configproblem.Problem) string {
	for _, x := range exceptions {
		if x.warning == p.Warning && x.pattern.MatchString(p.Error()) {
			return x.name
		}
	}
	return ""
}

// excepted reports whether extension name has a Problem of the named
// exception.
func (c *extCompare) excepted(name string, warning bool, exc string) bool {
	for _, p := range c.res.Problems {
		if p.Extension == name && p.Warning == warning && exceptionOf(p) == exc {
			c.out.exceptions[exc]++
			return true
		}
	}
	return false
}

func (c *extCompare) serves(name string) bool {
	return slices.ContainsFunc(c.res.Extensions, func(e snapshot.Extension) bool { return e.Name == name })
}

// problems are Gatehouse's Problems about entry e: of its key, naming it
// (by its name, its position, or the name as written) or the whole key,
// and duplicates of its name.
func (c *extCompare) problems(e argoEntry, warning bool) []configproblem.Problem {
	keys := map[string]bool{}
	for k := range c.cm {
		if rest, ok := strings.CutPrefix(k, settings.KeyExtensionConfig); ok && strings.TrimPrefix(rest, ".") == e.Key {
			keys[k] = true
		}
	}
	names := map[string]bool{e.Name: true, "": true}
	if e.Index >= 0 {
		names[fmt.Sprintf("extensions[%d]", e.Index)] = true
		for k := range c.cm {
			if strings.TrimPrefix(strings.TrimPrefix(k, settings.KeyExtensionConfig), ".") == e.Key {
				names[writtenName(c.cm[k], e.Index)] = true
			}
		}
	}
	var out []configproblem.Problem
	for _, p := range c.res.Problems {
		if p.Warning != warning || !names[p.Extension] {
			continue
		}
		if p.Name == settings.ArgoCDConfigMap && (keys[p.Key] || p.Key == "" && p.Extension != "") {
			out = append(out, p)
		}
	}
	return out
}

// writtenName is a list entry's name as written, for matching Gatehouse's
// Problems (which name an entry as written) to Argo CD's entries (named
// after "$" replacement).
func writtenName(list string, index int) string {
	var v struct {
		Extensions []map[string]any `json:"extensions"`
	}
	if err := yaml.Unmarshal([]byte(list), &v); err != nil || index >= len(v.Extensions) {
		return ""
	}
	name, _ := v.Extensions[index]["name"].(string)
	return name
}

func describeEntry(e argoEntry) string {
	key := settings.KeyExtensionConfig
	if e.Key != "" {
		key += "." + e.Key
	}
	if e.Index >= 0 {
		return fmt.Sprintf("key %q extensions[%d] (%q)", key, e.Index, e.Name)
	}
	return fmt.Sprintf("key %q (%q)", key, e.Name)
}

func describeCM(cm map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(cm)) {
		fmt.Fprintf(&b, "  %s: |\n", k)
		for _, line := range strings.Split(cm[k], "\n") {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return b.String()
}

func describeProblems(ps []configproblem.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %v\n", p)
	}
	return b.String()
}
