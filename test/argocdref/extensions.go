package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/server/extension"
	"github.com/argoproj/argo-cd/v3/util/settings"
	log "github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// ExtConfig is the extension settings of one Argo CD installation:
// argocd-cm's data (the ConfigMap labelled part of Argo CD, as installed)
// and the Secrets of the control-plane namespace, argocd-secret among them,
// with their labels (Argo CD resolves "$<secret>:<key>" in those labelled
// app.kubernetes.io/part-of=argocd).
type ExtConfig struct {
	ArgoCDCM map[string]string `json:"argocdCM"`
	Secrets  []Secret          `json:"secrets"`
}

// Secret is a Secret of the control-plane namespace.
type Secret struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Data   map[string]string `json:"data"`
}

// ExtAnswer is what argocd-server makes of one ExtConfig: its settings
// manager reads the objects, then the extension manager's
// UpdateExtensionRegistry builds the proxies, for the whole config and for
// each extension definition alone.
type ExtAnswer struct {
	// Error is why the whole config is refused ("" if accepted): Argo CD
	// then serves no extension at all.
	Error string `json:"error,omitempty"`
	// Ambiguous: two argocd-cm keys name the same extension (or both are
	// the list), and which one Argo CD reads depends on Go's map order;
	// Error and Extensions are then one of the possible outcomes.
	Ambiguous bool `json:"ambiguous,omitempty"`
	// Extensions are the registered extensions by name, when accepted.
	Extensions map[string][]Proxy `json:"extensions,omitempty"`
	// Entries are the definitions, each given to Argo CD alone.
	Entries []Entry `json:"entries,omitempty"`
}

// Entry is one extension definition judged alone.
type Entry struct {
	// Key is Argo CD's name for the argocd-cm key: the part after
	// "extension.config" without its leading dot; "" is the list.
	Key string `json:"key"`
	// Index is the position in the list's extensions; -1 for a keyed
	// definition, or for a list that Argo CD cannot split into entries.
	Index int `json:"index"`
	// Name is the extension's name after Argo CD replaced "$" references.
	Name       string  `json:"name,omitempty"`
	Error      string  `json:"error,omitempty"`
	Proxies    []Proxy `json:"proxies,omitempty"`
	Registered bool    `json:"registered,omitempty"`
}

// Proxy is one registry entry: its key (extension name aside) and what its
// reverse proxy does to a request.
type Proxy struct {
	ClusterName   string `json:"clusterName,omitempty"`
	ClusterServer string `json:"clusterServer,omitempty"`
	// Scheme and Host are where the Director sends requests; the
	// service URL's path is not used.
	Scheme  string              `json:"scheme"`
	Host    string              `json:"host"`
	Headers map[string][]string `json:"headers,omitempty"`
	// The transport's settings, defaults applied.
	ConnectionTimeout     time.Duration `json:"connectionTimeout"`
	KeepAlive             time.Duration `json:"keepAlive"`
	IdleConnectionTimeout time.Duration `json:"idleConnectionTimeout"`
	MaxIdleConnections    int           `json:"maxIdleConnections"`
}

// answerExtConfigs answers each config; they run at once, since each waits
// for its settings manager's informers, which client-go polls every 100 ms.
func answerExtConfigs(cfgs []ExtConfig) ([]ExtAnswer, error) {
	out := make([]ExtAnswer, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range cfgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = answerExtConfig(&cfgs[i])
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

const namespace = "argocd"

func answerExtConfig(c *ExtConfig) (ExtAnswer, error) {
	s, err := readSettings(c)
	if err != nil {
		return ExtAnswer{}, err
	}
	var a ExtAnswer
	// Argo CD maps each key to one name of s.ExtensionConfig: fewer names
	// than keys means two keys collided.
	keys := 0
	for k := range c.ArgoCDCM {
		if strings.HasPrefix(k, "extension.config") {
			keys++
		}
	}
	a.Ambiguous = keys != len(s.ExtensionConfig)

	// RegisterExtensions, as argocd-server starts, leaves a config without
	// extension keys alone (UpdateExtensionRegistry would refuse it).
	if len(s.ExtensionConfig) > 0 {
		a.Extensions, err = register(s, s.ExtensionConfig)
		if err != nil {
			a.Error = err.Error()
			a.Extensions = nil
		}
	}
	for _, key := range slices.Sorted(maps.Keys(s.ExtensionConfig)) {
		value := s.ExtensionConfig[key]
		if key != "" {
			a.Entries = append(a.Entries, judge(s, key, -1, key, value))
			continue
		}
		items, err := listItems(value)
		if err != nil {
			a.Entries = append(a.Entries, Entry{Key: "", Index: -1, Error: err.Error()})
			continue
		}
		for i, item := range items {
			one, err := yaml.Marshal(map[string]any{"extensions": []any{item}})
			if err != nil {
				return ExtAnswer{}, fmt.Errorf("marshal extension %d: %w", i, err)
			}
			a.Entries = append(a.Entries, judge(s, "", i, itemName(s, item), string(one)))
		}
	}
	return a, nil
}

// judge runs Argo CD on one definition alone.
func judge(s *settings.ArgoCDSettings, key string, index int, name, value string) Entry {
	e := Entry{Key: key, Index: index, Name: name}
	reg, err := register(s, map[string]string{key: value})
	if err != nil {
		e.Error = err.Error()
		return e
	}
	for n, proxies := range reg {
		// The name as Argo CD decoded it (a number becomes text).
		e.Name, e.Proxies, e.Registered = n, proxies, true
	}
	return e
}

// listItems splits the list's YAML as parseAndValidateConfig decodes it:
// go.yaml.in/yaml/v3 into a map; aliases are resolved then, so each item
// stands alone.
func listItems(value string) ([]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(value), &m); err != nil {
		return nil, fmt.Errorf("invalid extension config: %w", err)
	}
	items, ok := m["extensions"].([]any)
	if !ok && m["extensions"] != nil {
		return nil, errors.New("extensions is not a list")
	}
	return items, nil
}

// itemName is a list item's name after Argo CD's secret replacement, if
// it is text.
func itemName(s *settings.ArgoCDSettings, item any) string {
	m, ok := item.(map[string]any)
	if !ok {
		return ""
	}
	name, _ := settings.ReplaceMapSecrets(m, s.Secrets)["name"].(string)
	return name
}

// register runs UpdateExtensionRegistry on s with the given extension
// config and reads back every extension's proxies.
func register(s *settings.ArgoCDSettings, config map[string]string) (map[string][]Proxy, error) {
	one := *s
	one.ExtensionConfig = config
	m := extension.NewManager(log.NewEntry(log.StandardLogger()), namespace, nil, nil, nil, nil, nil, nil)
	if err := m.UpdateExtensionRegistry(&one); err != nil {
		return nil, err
	}
	out := map[string][]Proxy{}
	// The registry's names: the Manager keeps its registry unexported.
	for _, n := range reflect.ValueOf(m).Elem().FieldByName("registry").MapKeys() {
		name := n.String()
		reg, ok := m.ProxyRegistry(name)
		if !ok {
			continue
		}
		proxies := make([]Proxy, 0, len(reg))
		for key, p := range reg {
			px, err := describe(key, p)
			if err != nil {
				return nil, fmt.Errorf("extension %q: %w", name, err)
			}
			proxies = append(proxies, px)
		}
		slices.SortFunc(proxies, func(a, b Proxy) int {
			return strings.Compare(a.ClusterName+"\x00"+a.ClusterServer, b.ClusterName+"\x00"+b.ClusterServer)
		})
		out[name] = proxies
	}
	return out, nil
}

// describe reads a registry entry: the key's fields (unexported, read by
// reflection), the Director's effect on an empty request, the transport.
func describe(key extension.ProxyKey, p *httputil.ReverseProxy) (Proxy, error) {
	k := reflect.ValueOf(key)
	px := Proxy{ClusterName: k.FieldByName("clusterName").String(), ClusterServer: k.FieldByName("clusterServer").String()}
	req := &http.Request{URL: &url.URL{Path: "/"}, Header: http.Header{}}
	p.Director(req) //nolint:staticcheck // Argo CD builds its proxies with a Director: what it does is the answer
	px.Scheme, px.Host = req.URL.Scheme, req.URL.Host
	req.Header.Del("Host") // the Director sets it to Host
	if len(req.Header) > 0 {
		px.Headers = req.Header
	}
	t, ok := p.Transport.(*http.Transport)
	if !ok {
		return Proxy{}, fmt.Errorf("transport is a %T", p.Transport)
	}
	d, err := dialerOf(t.DialContext)
	if err != nil {
		return Proxy{}, err
	}
	px.ConnectionTimeout, px.KeepAlive = d.Timeout, d.KeepAlive
	px.IdleConnectionTimeout, px.MaxIdleConnections = t.IdleConnTimeout, t.MaxIdleConns
	return px, nil
}

// dialerOf returns the net.Dialer whose DialContext method value f is:
// newTransport keeps the dialer nowhere else. A method value is a closure
// whose first word is its code and second its receiver; the code's name is
// checked first, so a change of that layout fails loudly.
func dialerOf(f func(context.Context, string, string) (net.Conn, error)) (*net.Dialer, error) {
	if name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name(); name != "net.(*Dialer).DialContext-fm" {
		return nil, fmt.Errorf("DialContext is %s, not a net.Dialer's", name)
	}
	closure := *(*unsafe.Pointer)(unsafe.Pointer(&f)) //nolint:gosec // reads a method value's receiver; see above
	return (*struct {
		code uintptr
		d    *net.Dialer
	})(closure).d, nil
}

// readSettings runs Argo CD's settings manager over a fake clientset
// holding the config's objects, as argocd-server reads them.
func readSettings(c *ExtConfig) (*settings.ArgoCDSettings, error) {
	partOf := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	objs := []kruntime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: common.ArgoCDConfigMapName, Namespace: namespace, Labels: partOf}, Data: c.ArgoCDCM},
	}
	for _, s := range c.Secrets {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: namespace, Labels: s.Labels}, Data: bytesOf(s.Data)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr := settings.NewSettingsManager(ctx, fake.NewClientset(objs...), namespace)
	s, err := mgr.GetSettings()
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	return s, nil
}

func bytesOf(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
