package snapshot

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// index is the top manifest (IndexFile): the schema version and every other
// file with its SHA-256, so the snapshot is addressed by content and its
// version is the hash of this one file. Requires names restrictions the
// snapshot uses that a reader of an older schema must enforce or refuse
// (understoodRequirements); this release writes none.
type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	Requires      []string     `json:"requires,omitempty"`
	Files         []indexEntry `json:"files"`
}

// indexEntry is one file of the index.
type indexEntry struct {
	Path   string `json:"path"`
	Kind   Kind   `json:"kind"`
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

// Encode validates c and turns it into files, sorted by path, the index last.
// The same content always gives the same bytes: lists are sorted, maps are
// written in key order, and nothing time- or host-dependent is included.
// Encode does not modify c.
func Encode(c *Content) ([]File, error) { return new(Encoder).Encode(c) }

// Encoder is Encode with memory: it keeps each application shard's encoding
// and reuses it while the shard's Applications are unchanged, so that after
// a one-Application change only one shard is encoded again. Not safe for
// concurrent use.
type Encoder struct {
	shards map[string]encodedShard
	// shardOf remembers each Application's shard: hashing 10,000 keys on
	// every build was a tenth of a one-change build.
	shardOf map[appKey]string
	docs    map[string]encodedDoc
}

type appKey struct{ namespace, name string }

type encodedDoc struct {
	value any
	file  File
}

type encodedShard struct {
	apps  []Application
	stamp uint64 // Content.AppShards' stamp; 0 when encoded from Content.Applications
	file  File
	sum   string
}

// seenShard says whether s is the shard at path as last encoded.
func (e *Encoder) seenShard(path string, s AppShard) bool {
	old, ok := e.shards[path]
	return ok && s.Stamp != 0 && old.stamp == s.Stamp
}

// Encode is the package's Encode, reusing unchanged shards' bytes.
func (e *Encoder) Encode(c *Content) ([]File, error) {
	if err := c.validate(e.seenShard); err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	n := sortedCopy(c)
	var files []File
	add := func(path string, kind Kind, v any) error {
		b, err := marshal(v)
		if err != nil {
			return fmt.Errorf("encode snapshot: %s: %w", path, err)
		}
		files = append(files, File{Path: path, Kind: kind, Data: b})
		return nil
	}
	docs := make(map[string]encodedDoc, len(e.docs))
	// addDoc is add for a document that rarely changes: its bytes are kept
	// while its value is deeply equal to the last one (200 extensions took
	// a tenth of a one-Application build to encode).
	addDoc := func(path string, v any) error {
		if old, ok := e.docs[path]; ok && reflect.DeepEqual(old.value, v) {
			files = append(files, old.file)
			docs[path] = old
			return nil
		}
		if err := add(path, KindConfig, v); err != nil {
			return err
		}
		docs[path] = encodedDoc{value: v, file: files[len(files)-1]}
		return nil
	}
	if err := addDoc(extensionsFile, extensionsDoc{Extensions: n.Extensions, ArgoCDNamespace: n.ArgoCDNamespace}); err != nil {
		return nil, err
	}
	if err := addDoc(clustersFile, clustersDoc{Clusters: n.Clusters}); err != nil {
		return nil, err
	}
	if err := addDoc(authFile, n.Auth); err != nil {
		return nil, err
	}
	files = e.appendApplications(files, c)
	for path, projects := range groupBy(n.Projects, func(p Project) string { return projectShard(p.Name) }) {
		if err := addDoc(path, projectsDoc{Projects: projects}); err != nil {
			return nil, err
		}
	}
	e.docs = docs
	for p, b := range n.Policy {
		files = append(files, File{Path: PolicyDir + "/" + p, Kind: KindPolicy, Data: b})
	}
	for p, b := range n.Secrets {
		files = append(files, File{Path: secretsDir + "/" + p, Kind: KindSecret, Data: b})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	idx := index{SchemaVersion: SchemaVersion, Files: make([]indexEntry, len(files))}
	for i, f := range files {
		idx.Files[i] = indexEntry{Path: f.Path, Kind: f.Kind, SHA256: e.sum(f), Size: len(f.Data)}
	}
	if err := add(IndexFile, KindConfig, idx); err != nil {
		return nil, err
	}
	return files, nil
}

// appendApplications appends c's application shards to files: those whose
// Applications are unchanged (the same stamp in c.AppShards, or the same
// list grouped from c.Applications) with the bytes of the last Encode.
func (e *Encoder) appendApplications(files []File, c *Content) []File {
	shards := make(map[string]encodedShard, len(e.shards))
	for path, s := range c.AppShards {
		switch {
		case len(s.Apps) == 0:
		case e.seenShard(path, s):
			files = append(files, e.shards[path].file)
			shards[path] = e.shards[path]
		default:
			f := File{Path: path, Kind: KindConfig, Data: marshalApplications(s.Apps)}
			files = append(files, f)
			shards[path] = encodedShard{stamp: s.Stamp, file: f}
		}
	}
	for path, apps := range e.groupApplications(c.Applications) {
		if old, ok := e.shards[path]; ok && old.stamp == 0 && slices.Equal(old.apps, apps) {
			files = append(files, old.file)
			shards[path] = old
			continue
		}
		f := File{Path: path, Kind: KindConfig, Data: marshalApplications(apps)}
		files = append(files, f)
		shards[path] = encodedShard{apps: apps, file: f}
	}
	e.shards = shards
	return files
}

// groupApplications splits apps by shard, each shard sorted by namespace
// and name (sorting 40 per shard is cheaper than 10,000 at once).
func (e *Encoder) groupApplications(apps []Application) map[string][]Application {
	shardOf := make(map[appKey]string, len(apps))
	out := map[string][]Application{}
	for _, a := range apps {
		key := appKey{a.Namespace, a.Name}
		shard, ok := e.shardOf[key]
		if !ok {
			shard = ApplicationShard(a.Key())
		}
		shardOf[key] = shard
		out[shard] = append(out[shard], a)
	}
	for _, list := range out {
		slices.SortFunc(list, compareApplications)
	}
	e.shardOf = shardOf
	return out
}

func compareApplications(a, b Application) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// sum is f's SHA-256, reused from the shard cache when f is a kept shard.
func (e *Encoder) sum(f File) string {
	if s, ok := e.shards[f.Path]; ok && len(f.Data) > 0 && len(s.file.Data) == len(f.Data) && &s.file.Data[0] == &f.Data[0] {
		if s.sum == "" {
			s.sum = Hash(f.Data)
			e.shards[f.Path] = s
		}
		return s.sum
	}
	return Hash(f.Data)
}

// The documents' top level is an object, so a later schema can add fields
// beside the list.
type (
	extensionsDoc struct {
		Extensions      []Extension `json:"extensions"`
		ArgoCDNamespace string      `json:"argocdNamespace,omitempty"`
	}
	clustersDoc struct {
		Clusters []Cluster `json:"clusters"`
	}
	applicationsDoc struct {
		Applications []Application `json:"applications"`
	}
	projectsDoc struct {
		Projects []Project `json:"projects"`
	}
)

// marshal writes indented JSON with a final newline: snapshots are read by
// people debugging them, and indentation costs little after compression.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sortedCopy returns c with every list but the Applications (sorted per
// shard) in its canonical order. Slices are copied before sorting; the
// elements' own slices are shared (read only).
func sortedCopy(c *Content) Content {
	n := *c
	n.Extensions = slices.SortedFunc(slices.Values(c.Extensions), func(a, b Extension) int { return strings.Compare(a.Name, b.Name) })
	n.Projects = slices.SortedFunc(slices.Values(c.Projects), func(a, b Project) int { return strings.Compare(a.Name, b.Name) })
	n.Clusters = slices.SortedFunc(slices.Values(c.Clusters), func(a, b Cluster) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Server, b.Server))
	})
	n.Auth.Accounts = slices.SortedFunc(slices.Values(c.Auth.Accounts), func(a, b Account) int { return strings.Compare(a.Name, b.Name) })
	if len(n.Auth.Accounts) == 0 {
		n.Auth.Accounts = nil
	}
	if n.Extensions == nil {
		n.Extensions = []Extension{}
	}
	if n.Clusters == nil {
		n.Clusters = []Cluster{}
	}
	return n
}

// groupBy splits sorted items by the file they belong in, keeping their order.
func groupBy[T any](items []T, file func(T) string) map[string][]T {
	out := map[string][]T{}
	for _, it := range items {
		f := file(it)
		out[f] = append(out[f], it)
	}
	return out
}

// marshalApplications writes applicationsDoc{apps} exactly as marshal
// does, without reflection and without indenting a second pass over the
// bytes: at 100,000 Applications, encoding/json's indentation alone was a
// quarter of a full build. A test checks it against marshal.
func marshalApplications(apps []Application) []byte {
	if len(apps) == 0 {
		b, _ := marshal(applicationsDoc{Applications: apps}) // "null" or "[]": the rare case, the plain way
		return b
	}
	buf := make([]byte, 0, 160*len(apps))
	buf = append(buf, "{\n \"applications\": [\n"...)
	for i, a := range apps {
		if i > 0 {
			buf = append(buf, ",\n"...)
		}
		buf = append(buf, "  {\n   \"namespace\": "...)
		buf = appendJSONString(buf, a.Namespace)
		buf = append(buf, ",\n   \"name\": "...)
		buf = appendJSONString(buf, a.Name)
		buf = append(buf, ",\n   \"project\": "...)
		buf = appendJSONString(buf, a.Project)
		buf = append(buf, ",\n   \"destination\": {"...)
		sep := "\n    "
		for _, f := range [...]struct{ key, value string }{{"name", a.Destination.Name}, {"server", a.Destination.Server}, {"namespace", a.Destination.Namespace}} {
			if f.value == "" {
				continue
			}
			buf = append(buf, sep...)
			buf = append(buf, '"')
			buf = append(buf, f.key...)
			buf = append(buf, "\": "...)
			buf = appendJSONString(buf, f.value)
			sep = ",\n    "
		}
		if sep != "\n    " {
			buf = append(buf, "\n   "...)
		}
		buf = append(buf, "}\n  }"...)
	}
	return append(buf, "\n ]\n}\n"...)
}

// appendJSONString appends s as encoding/json writes it with HTML escaping
// off: printable ASCII other than a quote or backslash as is, anything else
// through encoding/json itself.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
