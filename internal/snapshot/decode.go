package snapshot

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode reads a snapshot through get, which returns a file's content by
// path (a sidecar.Snapshot's File method fits). It verifies every file
// against the index and validates the result. A snapshot of this schema is
// decoded strictly (an unknown field or file is an error); one of an
// adjacent schema (ReadableSchemas: a controller one minor release older or
// newer) skips the fields and files it does not know, and is refused if its
// index requires a restriction this reader cannot enforce. Anything it
// cannot trust is an error; the caller keeps serving what it had.
func Decode(get func(path string) ([]byte, bool)) (*Content, error) { return new(Decoder).Decode(get) }

// Decoder is Decode with memory: it keeps the Applications and projects of
// each shard it decoded, by the shard's SHA-256, and a later snapshot that
// holds the same shard takes them instead of decoding it again. One changed
// Application changes one shard, so a new version of a 10,000-Application
// snapshot decodes a few kilobytes instead of a few megabytes, and a proxy
// loading it under load takes a fraction of a millisecond from its requests
// rather than tens. Every file is still verified against the index. The
// Contents it returns share those Applications and projects: treat them as
// read-only, as every Content. Not safe for concurrent use.
type Decoder struct {
	// apps are the Applications of each shard, packed so that what is
	// kept between snapshots holds no pointer (appShard).
	apps     map[string]appShard
	projects map[string][]Project
	// next are the shards of the snapshot being decoded, which become the
	// memory once it decodes: the memory holds one snapshot's shards.
	nextApps     map[string]appShard
	nextProjects map[string][]Project
	// strict is whether the snapshot being decoded is of the reader's own
	// schema: only then is an unknown field or file an error.
	strict bool
	// own is the schema the reader reads as its own; 0 is SchemaVersion.
	// Tests set it to read as the next or previous release would.
	own int
}

// Decode is the package's Decode, taking unchanged shards from the last
// snapshot this Decoder decoded without an error.
func (d *Decoder) Decode(get func(path string) ([]byte, bool)) (*Content, error) {
	d.nextApps, d.nextProjects = map[string]appShard{}, map[string][]Project{}
	c, err := d.decode(get)
	if err == nil {
		d.apps, d.projects = d.nextApps, d.nextProjects
	}
	d.nextApps, d.nextProjects = nil, nil
	return c, err
}

func (d *Decoder) decode(get func(path string) ([]byte, bool)) (*Content, error) {
	raw, ok := get(IndexFile)
	if !ok {
		return nil, fmt.Errorf("load snapshot: %s is missing: the files are not a Gatehouse snapshot", IndexFile)
	}
	idx, err := d.index(raw)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %s: %w", IndexFile, err)
	}
	c := &Content{Policy: map[string][]byte{}, Secrets: map[string][]byte{}}
	seen := map[string]bool{}
	for _, e := range idx.Files {
		if seen[e.Path] {
			return nil, fmt.Errorf("load snapshot: %s lists %q twice", IndexFile, e.Path)
		}
		seen[e.Path] = true
		b, err := verified(get, e)
		if err != nil {
			return nil, fmt.Errorf("load snapshot: %s: %w", e.Path, err)
		}
		if err := d.decodeFile(c, e, b); err != nil {
			return nil, fmt.Errorf("load snapshot: %s: %w", e.Path, err)
		}
	}
	for _, required := range []string{extensionsFile, clustersFile, authFile} {
		if !seen[required] {
			return nil, fmt.Errorf("load snapshot: %s is missing from %s", required, IndexFile)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	return c, nil
}

// index reads the index, checks its schema against the reader's and
// decides how strictly the rest is read.
func (d *Decoder) index(raw []byte) (*index, error) {
	own := cmp.Or(d.own, SchemaVersion)
	var head struct {
		SchemaVersion int `json:"schemaVersion"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := checkSchema(head.SchemaVersion, own); err != nil {
		return nil, err
	}
	d.strict = head.SchemaVersion == own
	var idx index
	if err := d.json(raw, &idx); err != nil {
		return nil, err
	}
	for _, r := range idx.Requires {
		if !understoodRequirements[r] {
			return nil, fmt.Errorf("the snapshot requires %q, which this reader (schema %d) cannot enforce: upgrade the agents and proxies to the controller's release; until then they keep serving the last snapshot they loaded", truncate(r, 64), own)
		}
	}
	return &idx, nil
}

// checkSchema refuses a schema more than one release from own, saying which
// side to upgrade.
func checkSchema(v, own int) error {
	oldest, newest := readable(own)
	switch {
	case v > newest:
		return fmt.Errorf("schemaVersion %d is newer than this reader's %d by more than one minor release (it reads %d to %d): upgrade the agents and proxies to the controller's release", v, own, oldest, newest)
	case v < oldest:
		return fmt.Errorf("schemaVersion %d is older than this reader's %d by more than one minor release, or was never released (it reads %d to %d): upgrade the controller to the agents' and proxies' release", v, own, oldest, newest)
	}
	return nil
}

// truncate keeps a name read from a snapshot short in an error.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func verified(get func(string) ([]byte, bool), e indexEntry) ([]byte, error) {
	if e.Path == IndexFile {
		return nil, errors.New("the index lists itself")
	}
	if err := ValidatePath(e.Path); err != nil {
		return nil, fmt.Errorf("not a valid path for a snapshot file: %w", err)
	}
	b, ok := get(e.Path)
	if !ok {
		return nil, errors.New("listed in the index but missing")
	}
	if len(b) != e.Size || Hash(b) != e.SHA256 {
		return nil, errors.New("content does not match the index's size and sha256")
	}
	return b, nil
}

// decodeFile decodes one verified file into c by where it sits.
func (d *Decoder) decodeFile(c *Content, e indexEntry, b []byte) error {
	dir, rest, _ := strings.Cut(e.Path, "/")
	if want := kindOf(e.Path); e.Kind != want {
		return fmt.Errorf("kind %q, want %q", e.Kind, want)
	}
	switch {
	case e.Path == extensionsFile:
		var doc extensionsDoc
		err := d.json(b, &doc)
		c.Extensions, c.ArgoCDNamespace = doc.Extensions, doc.ArgoCDNamespace
		return err
	case e.Path == clustersFile:
		var doc clustersDoc
		err := d.json(b, &doc)
		c.Clusters = doc.Clusters
		return err
	case e.Path == authFile:
		return d.json(b, &c.Auth)
	case dir == applicationsDir:
		key := e.Path + "\x00" + e.SHA256
		if shard, ok := d.apps[key]; ok {
			d.nextApps[key] = shard
			c.Applications = shard.appendTo(c.Applications)
			return nil
		}
		var doc applicationsDoc
		if err := d.json(b, &doc); err != nil {
			return err
		}
		for _, a := range doc.Applications {
			if ApplicationShard(a.Key()) != e.Path {
				return fmt.Errorf("application %q belongs in %s", a.Key(), ApplicationShard(a.Key()))
			}
		}
		if shard, ok := packApps(doc.Applications); ok {
			d.nextApps[key] = shard
		}
		c.Applications = append(c.Applications, doc.Applications...)
		return nil
	case dir == projectsDir:
		projects, ok := d.projects[e.Path+"\x00"+e.SHA256]
		if !ok {
			var doc projectsDoc
			if err := d.json(b, &doc); err != nil {
				return err
			}
			for _, p := range doc.Projects {
				if projectShard(p.Name) != e.Path {
					return fmt.Errorf("project %q belongs in %s", p.Name, projectShard(p.Name))
				}
			}
			projects = doc.Projects
		}
		d.nextProjects[e.Path+"\x00"+e.SHA256] = projects
		c.Projects = append(c.Projects, projects...)
		return nil
	case dir == PolicyDir && rest != "":
		c.Policy[rest] = b
		return nil
	case dir == secretsDir && rest != "":
		c.Secrets[rest] = b
		return nil
	case !d.strict:
		return nil // an adjacent schema's file this reader does not know: verified, not read
	}
	return errors.New("not a file of this schema version")
}

// json decodes one file of the snapshot: strictly when it is of the
// reader's own schema, skipping unknown fields when it is of an adjacent one.
func (d *Decoder) json(b []byte, v any) error {
	if d.strict {
		return strictJSON(b, v)
	}
	return lenientJSON(b, v)
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictJSON(b []byte, v any) error { return decodeJSON(b, v, true) }

// lenientJSON is strictJSON that skips unknown fields.
func lenientJSON(b []byte, v any) error { return decodeJSON(b, v, false) }

func decodeJSON(b []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return errors.New("decode: data after the JSON value")
	}
	return nil
}
