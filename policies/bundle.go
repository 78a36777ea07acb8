package policies

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// defaultEntrypoint is the rule a policy must define: the decision object
// {"allow": bool, "reason": string, "headers": {name: value}}.
const defaultEntrypoint = "gatehouse/extensions/decision"

// File names in a bundle directory, as in OPA bundles.
const (
	DataFile     = "data.json"
	ManifestFile = ".manifest"
)

// Bundle is one version of a policy: Rego modules, the data document and the
// manifest. Build it with LoadDir, LoadFS, LoadFiles or DefaultBundle.
type Bundle struct {
	Modules  []Module
	Data     map[string]any
	Manifest Manifest
	// UsesDefaultPolicy is set by LoadDir and LoadFS when the directory has
	// no policy module of its own, so the embedded default policy (and, for
	// tests, its tests) was added.
	UsesDefaultPolicy bool
	// Capabilities are the builtins the bundle is compiled against (nil:
	// the default capabilities). They are the deployment's, never the bundle's
	// own: LoadFiles reads CapabilitiesFile only with
	// LoadOptions.Capabilities, for the snapshot the controller wrote.
	Capabilities *Capabilities
}

// Module is one Rego source file; Path names it in compiler messages.
type Module struct {
	Path   string
	Source []byte
}

// Manifest is a bundle's .manifest. It is OPA's bundle manifest; Gatehouse's
// settings live in its metadata:
//
//	{"revision": "2026-08-01.1",
//	 "metadata": {"enforcing": false, "entrypoint": "gatehouse/extensions/decision"}}
type Manifest struct {
	// Revision names the policy version in logs and decisions.
	Revision string `json:"revision,omitempty"`
	// RegoVersion is 1 (the default, Rego v1 syntax) or 0.
	RegoVersion *int `json:"rego_version,omitempty"`
	// Metadata holds Gatehouse's settings.
	Metadata ManifestMetadata `json:"metadata,omitzero"`
}

// ManifestMetadata are Gatehouse's bundle settings.
type ManifestMetadata struct {
	// Enforcing is true unless set to false: a non-enforcing policy runs in
	// shadow mode, logging what it would deny and allowing it.
	Enforcing *bool `json:"enforcing,omitempty"`
	// Entrypoint is the decision rule, as a slash path (defaultEntrypoint).
	Entrypoint string `json:"entrypoint,omitempty"`
	// CacheKeyIncludesPath must be set by a policy that reads
	// input.request.path, so decisions are cached per path.
	CacheKeyIncludesPath bool `json:"cacheKeyIncludesPath,omitempty"`
}

// IsEnforcing reports whether the bundle's decisions are enforced.
func (m Manifest) IsEnforcing() bool {
	return m.Metadata.Enforcing == nil || *m.Metadata.Enforcing
}

// Query returns the Rego query for the manifest's entrypoint.
func (m Manifest) Query() (string, error) {
	ep := m.Metadata.Entrypoint
	if ep == "" {
		ep = defaultEntrypoint
	}
	ep = strings.TrimPrefix(strings.TrimPrefix(ep, "data."), "data/")
	parts := strings.FieldsFunc(ep, func(r rune) bool { return r == '/' || r == '.' })
	if len(parts) == 0 {
		return "", fmt.Errorf("entrypoint %q names no rule", m.Metadata.Entrypoint)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return "", fmt.Errorf("entrypoint %q: %q is not a Rego identifier", m.Metadata.Entrypoint, p)
		}
	}
	return "data." + strings.Join(parts, "."), nil
}

func isIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// LoadOptions choose what LoadDir, LoadFS and LoadFiles read.
type LoadOptions struct {
	// Tests includes *_test.rego files (for RunTests); the engine leaves them out.
	Tests bool
	// Capabilities reads CapabilitiesFile at the root into
	// Bundle.Capabilities: only for a snapshot's policy directory, which
	// the controller wrote (a bundle's own file would widen what it may
	// call). Without it the file is ignored.
	Capabilities bool
}

// LoadDir reads a bundle directory: every .rego file below it, every
// data.json (merged at its directory's path, as in OPA bundles) and the
// .manifest at its root. Other files, such as data.example.json, are ignored.
//
// A directory without a policy module of its own (*_test.rego files do not
// count) gets the embedded default policy, as policy ConfigMaps do in the
// cluster: data.json alone is a complete policy. With Tests, it also gets
// the default policy's tests if it has none of its own. A directory with
// neither .rego files nor data.json is refused.
func LoadDir(dir string, opts LoadOptions) (Bundle, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return Bundle{}, fmt.Errorf("load policy %s: %w", dir, err)
	}
	if !info.IsDir() {
		return Bundle{}, fmt.Errorf("load policy %s: not a directory", dir)
	}
	b, err := LoadFS(os.DirFS(dir), ".", opts)
	if err != nil {
		return Bundle{}, fmt.Errorf("load policy %s: %w", dir, err)
	}
	return b, nil
}

// LoadFS is LoadDir for a directory of fsys.
func LoadFS(fsys fs.FS, root string, opts LoadOptions) (Bundle, error) {
	b := Bundle{Data: map[string]any{}}
	sawData := false
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := p
		switch {
		case p == root:
			rel = ""
		case root != ".":
			rel = strings.TrimPrefix(p, root+"/")
		}
		if d.IsDir() {
			if rel != "" && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir // .git and the like
			}
			return nil
		}
		sawData = sawData || d.Name() == DataFile
		return b.addFile(rel, func() ([]byte, error) { return fs.ReadFile(fsys, p) }, opts)
	})
	if err != nil {
		return Bundle{}, err
	}
	return b.finish(sawData, opts)
}

// LoadFiles is LoadDir for files held in memory by slash-separated path
// relative to the bundle root, as a snapshot's policy directory holds them.
func LoadFiles(files map[string][]byte, opts LoadOptions) (Bundle, error) {
	b := Bundle{Data: map[string]any{}}
	sawData := false
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if slices.ContainsFunc(strings.Split(path.Dir(p), "/"), func(dir string) bool { return dir != "." && strings.HasPrefix(dir, ".") }) {
			continue // as LoadFS skips .git and the like
		}
		sawData = sawData || path.Base(p) == DataFile
		if err := b.addFile(p, func() ([]byte, error) { return files[p], nil }, opts); err != nil {
			return Bundle{}, err
		}
	}
	return b.finish(sawData, opts)
}

// addFile adds the file at rel (slash-separated, relative to the bundle
// root) to b, reading it with read if it belongs to a bundle.
func (b *Bundle) addFile(rel string, read func() ([]byte, error), opts LoadOptions) error {
	name := path.Base(rel)
	switch {
	case strings.HasSuffix(name, ".rego"):
		if strings.HasSuffix(name, "_test.rego") && !opts.Tests {
			return nil
		}
		src, err := read()
		if err != nil {
			return err
		}
		b.Modules = append(b.Modules, Module{Path: rel, Source: src})
	case name == DataFile:
		raw, err := read()
		if err != nil {
			return err
		}
		doc, err := decodeJSONObject(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		var at []string
		if dir := path.Dir(rel); dir != "." {
			at = strings.Split(dir, "/")
		}
		if err := mergeAt(b.Data, at, doc); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	case name == ManifestFile && rel == ManifestFile:
		raw, err := read()
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &b.Manifest); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	case rel == CapabilitiesFile && opts.Capabilities:
		raw, err := read()
		if err != nil {
			return err
		}
		if b.Capabilities, err = ParseCapabilities(raw); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	return nil
}

// finish refuses a bundle with neither Rego nor data, adds the default policy
// to one without a policy of its own, and sorts the modules.
func (b Bundle) finish(sawData bool, opts LoadOptions) (Bundle, error) {
	if len(b.Modules) == 0 && !sawData {
		return Bundle{}, errors.New("no .rego files and no data.json: give a policy directory (gatehouse policy init DIR writes one)")
	}
	b.addDefaults(opts.Tests)
	sort.Slice(b.Modules, func(i, j int) bool { return b.Modules[i].Path < b.Modules[j].Path })
	return b, nil
}

// addDefaults adds the embedded default policy to a bundle without a policy
// module of its own, and its tests if tests are wanted and it has none.
func (b *Bundle) addDefaults(tests bool) {
	own, ownTests := 0, 0
	for _, m := range b.Modules {
		if isTestModule(m.Path) {
			ownTests++
		} else {
			own++
		}
	}
	if own > 0 {
		return
	}
	b.UsesDefaultPolicy = true
	b.Modules = append(b.Modules, Module{Path: defaultPolicyPath, Source: DefaultPolicy()})
	if tests && ownTests == 0 {
		b.Modules = append(b.Modules, Module{Path: defaultTestsPath, Source: DefaultPolicyTests()})
	}
}

// WithoutDefaults is the bundle as its directory holds it, without the
// embedded default policy and tests LoadDir adds: what `gatehouse policy
// build` publishes, so a bundle of grants keeps running under the default
// policy of the Gatehouse release that loads it.
func (b Bundle) WithoutDefaults() Bundle {
	if !b.UsesDefaultPolicy {
		return b
	}
	out := b
	out.Modules = nil
	out.UsesDefaultPolicy = false
	for _, m := range b.Modules {
		if m.Path != defaultPolicyPath && m.Path != defaultTestsPath {
			out.Modules = append(out.Modules, m)
		}
	}
	return out
}

func isTestModule(p string) bool { return strings.HasSuffix(p, "_test.rego") }

// DecodeData decodes a data document as LoadDir reads data.json: a JSON
// object, numbers kept exact.
func DecodeData(raw []byte) (map[string]any, error) { return decodeJSONObject(raw) }

// MergeData merges doc into data at the root as LoadDir merges data.json
// files: objects merge, and any other value may be set only once.
func MergeData(data, doc map[string]any) error { return mergeAt(data, nil, doc) }

// decodeJSONObject decodes a JSON object, keeping numbers exact.
func decodeJSONObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if doc == nil {
		return nil, errors.New("decode JSON: want an object")
	}
	if dec.More() {
		return nil, errors.New("decode JSON: more than one value")
	}
	return doc, nil
}

// mergeAt merges doc into data at the path at; two documents may not set the
// same leaf.
func mergeAt(data map[string]any, at []string, doc map[string]any) error {
	for _, k := range at {
		next, ok := data[k]
		if !ok {
			m := map[string]any{}
			data[k] = m
			data = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("data at %s is not an object", strings.Join(at, "."))
		}
		data = m
	}
	for k, v := range doc {
		old, ok := data[k]
		if !ok {
			data[k] = v
			continue
		}
		om, ok1 := old.(map[string]any)
		nm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("data key %q is set twice", k)
		}
		if err := mergeAt(om, nil, nm); err != nil {
			return err
		}
	}
	return nil
}

// Digest is a content hash of the bundle; the engine recompiles only when it
// changes.
func (b Bundle) Digest() string {
	h := sha256.New()
	mods := append([]Module(nil), b.Modules...)
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	for _, m := range mods {
		fmt.Fprintf(h, "module %d %s %d\n", len(m.Path), m.Path, len(m.Source))
		h.Write(m.Source)
	}
	data, _ := json.Marshal(b.Data) // map keys are sorted
	fmt.Fprintf(h, "data %d\n", len(data))
	h.Write(data)
	manifest, _ := json.Marshal(b.Manifest)
	fmt.Fprintf(h, "manifest %d\n", len(manifest))
	h.Write(manifest)
	caps := b.Capabilities.JSON()
	fmt.Fprintf(h, "capabilities %d\n", len(caps))
	h.Write(caps)
	return hex.EncodeToString(h.Sum(nil))
}

// regoVersion is the Rego language version the bundle's manifest asks for
// (v1 unless rego_version is 0).
func (b Bundle) regoVersion() (ast.RegoVersion, error) {
	v := b.Manifest.RegoVersion
	switch {
	case v == nil || *v == 1:
		return ast.RegoV1, nil
	case *v == 0:
		return ast.RegoV0, nil
	default:
		return ast.RegoV1, fmt.Errorf("manifest: rego_version %d: want 0 or 1", *v)
	}
}

// parseModules parses every module, collecting all syntax errors so that
// an admin sees each one with its file and line at once.
func (b Bundle) parseModules(v ast.RegoVersion) (map[string]*ast.Module, error) {
	modules := make(map[string]*ast.Module, len(b.Modules))
	var parseErrs ast.Errors
	for _, m := range b.Modules {
		mod, err := ast.ParseModuleWithOpts(m.Path, string(m.Source), ast.ParserOptions{RegoVersion: v, ProcessAnnotation: true})
		if err != nil {
			var errs ast.Errors
			if errors.As(err, &errs) {
				parseErrs = append(parseErrs, errs...)
				continue
			}
			return nil, fmt.Errorf("parse %s: %w", m.Path, err)
		}
		if _, dup := modules[m.Path]; dup {
			return nil, fmt.Errorf("module %s given twice", m.Path)
		}
		modules[m.Path] = mod
	}
	if len(parseErrs) > 0 {
		return nil, fmt.Errorf("does not compile: %w", parseErrs)
	}
	return modules, nil
}
