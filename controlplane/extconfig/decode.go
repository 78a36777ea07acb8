package extconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The raw types mirror what people write. Decoding is case-sensitive, as
// Argo CD's YAML decoding is: "URL:" is an unknown field, not "url:".

type rawList struct {
	Extensions []json.RawMessage `json:"extensions"`
}

// rawExtLevel holds an extension's settings outside its backend; in an
// "extension.config.<name>" key they sit beside the backend's own fields.
type rawExtLevel struct {
	// Enabled is the proposal's; false means "not served".
	Enabled        *bool           `json:"enabled"`
	System         bool            `json:"system"`
	RequestTimeout json.RawMessage `json:"requestTimeout"`
	Limits         rawLimits       `json:"limits"`
}

type rawExtension struct {
	Name string `json:"name"`
	rawExtLevel
	Backend rawBackend `json:"backend"`
}

// rawKeyed is an "extension.config.<name>" value: Argo CD reads it as the
// backend itself, with no "backend:" level and no name.
type rawKeyed struct {
	rawExtLevel
	rawBackend
}

type rawBackend struct {
	Services              []rawService    `json:"services"`
	ConnectionTimeout     json.RawMessage `json:"connectionTimeout"`
	KeepAlive             json.RawMessage `json:"keepAlive"`
	IdleConnectionTimeout json.RawMessage `json:"idleConnectionTimeout"`
	// IdleConnTimeout is the proposal's name for IdleConnectionTimeout.
	IdleConnTimeout    json.RawMessage `json:"idleConnTimeout"`
	MaxIdleConnections int             `json:"maxIdleConnections"`
}

type rawService struct {
	URL  string   `json:"url"`
	URLs []string `json:"urls"`
	// Cluster is Argo CD's; ClusterName the proposal's.
	Cluster     *rawCluster `json:"cluster"`
	ClusterName string      `json:"clusterName"`
	Headers     []rawHeader `json:"headers"`
	TLS         *rawTLS     `json:"tls"`
}

type rawCluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
}

type rawHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type rawTLS struct {
	CASecretRef         *rawSecretKeyRef `json:"caSecretRef"`
	ClientCertSecretRef *rawSecretRef    `json:"clientCertSecretRef"`
	ServerName          string           `json:"serverName"`
	InsecureSkipVerify  bool             `json:"insecureSkipVerify"`
}

type rawSecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type rawSecretRef struct {
	Name string `json:"name"`
}

type rawLimits struct {
	PerUser       rawRate `json:"perUser"`
	PerExtension  rawRate `json:"perExtension"`
	MaxConcurrent int     `json:"maxConcurrent"`
}

type rawRate struct {
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	Burst             int     `json:"burst"`
}

// yamlToJSON refuses duplicate keys, as Argo CD's YAML decoder does: which
// of two values wins is not something to guess.
func yamlToJSON(text string) (json.RawMessage, error) {
	j, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("the YAML does not parse (%s): fix it", cleanYAMLError(err))
	}
	return j, nil
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	return strings.TrimPrefix(s, "yaml: ")
}

// decode fills v case-sensitively. Unknown fields come back as warnings:
// they are most often typos, and the rest of the definition still holds.
func decode(raw json.RawMessage, v any) (unknown []string, err error) {
	strict, err := sjson.UnmarshalStrict(raw, v)
	if err != nil {
		return nil, describeDecodeError(err)
	}
	for _, s := range strict {
		var fe sjson.FieldError
		if errors.As(s, &fe) {
			unknown = append(unknown, fe.FieldPath())
		}
	}
	return unknown, nil
}

// typeError matches the decoder's type errors, whose type is internal to
// sigs.k8s.io/json; they name Go types, which mean nothing to a person
// writing YAML.
var typeError = regexp.MustCompile(`^json: cannot unmarshal (\S+)(?: \S+)? into Go (?:struct field \w*\.(\S+)|value) of type (.+)$`)

func describeDecodeError(err error) error {
	m := typeError.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("cannot be read: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	got, field, want := m[1], m[2], goTypeWords(m[3])
	// A keyed definition's fields sit in embedded structs, which the
	// decoder names; a person wrote no such level.
	field = strings.TrimPrefix(strings.TrimPrefix(field, "rawBackend."), "rawExtLevel.")
	hint := ""
	if got != "string" && want == "a string" {
		// This YAML reader follows YAML 1.1, where yes, no, on and off
		// are booleans.
		hint = ": quote the value"
	}
	if field == "" {
		return fmt.Errorf("want %s, not %s%s", want, yamlWords(got), hint)
	}
	return fmt.Errorf("%s: want %s, not %s%s", field, want, yamlWords(got), hint)
}

func goTypeWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a mapping"
}

func yamlWords(jsonKind string) string {
	switch jsonKind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	}
	return "a " + jsonKind
}

// knownFields are every field name the raw types read, for suggestions.
var knownFields = func() []string {
	seen := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && !seen[name] {
				seen[name] = true
				walk(f.Type)
			} else if f.Anonymous {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[rawList]())
	walk(reflect.TypeFor[rawExtension]())
	walk(reflect.TypeFor[rawKeyed]())
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}()

// unknownFieldError says what to do about a field Gatehouse does not read,
// guessing the intended one: a misspelt timeout must not pass unnoticed.
func unknownFieldError(path string) error {
	leaf := path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		leaf = path[i+1:]
	}
	if slices.Contains(knownFields, leaf) {
		return fmt.Errorf("field %q is not read at this level and is ignored: check its indentation", path)
	}
	best, bestDist := "", 3
	for _, k := range knownFields {
		if strings.EqualFold(k, leaf) {
			return fmt.Errorf("unknown field %q is ignored: field names are case-sensitive; did you mean %q?", path, k)
		}
		if d := editDistance(leaf, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Errorf("unknown field %q is ignored: did you mean %q?", path, best)
	}
	return fmt.Errorf("unknown field %q is ignored: remove it or check its spelling", path)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
