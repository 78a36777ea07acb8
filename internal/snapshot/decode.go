package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode reads a snapshot through get, which returns a file's content by
// path (a sidecar.Snapshot's File method fits). It verifies every file
// against the index, decodes strictly (unknown fields are errors: a newer
// schema must bump schemaVersion) and validates the result. Anything it
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
	apps     map[string][]Application
	projects map[string][]Project
	// next are the shards of the snapshot being decoded, which become the
	// memory once it decodes: the memory holds one snapshot's shards.
	nextApps     map[string][]Application
	nextProjects map[string][]Project
}

// Decode is the package's Decode, taking unchanged shards from the last
// snapshot this Decoder decoded without an error.
func (d *Decoder) Decode(get func(path string) ([]byte, bool)) (*Content, error) {
	d.nextApps, d.nextProjects = map[string][]Application{}, map[string][]Project{}
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
	var idx index
	if err := strictJSON(raw, &idx); err != nil {
		return nil, fmt.Errorf("load snapshot: %s: %w", IndexFile, err)
	}
	if idx.SchemaVersion != schemaVersion {
		return nil, fmt.Errorf("load snapshot: schemaVersion %d, but this proxy reads %d: run the proxy and controller from the same release",
			idx.SchemaVersion, schemaVersion)
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
		var d extensionsDoc
		err := strictJSON(b, &d)
		c.Extensions, c.ArgoCDNamespace = d.Extensions, d.ArgoCDNamespace
		return err
	case e.Path == clustersFile:
		var d clustersDoc
		err := strictJSON(b, &d)
		c.Clusters = d.Clusters
		return err
	case e.Path == authFile:
		return strictJSON(b, &c.Auth)
	case dir == applicationsDir:
		apps, ok := d.apps[e.Path+"\x00"+e.SHA256]
		if !ok {
			var doc applicationsDoc
			if err := strictJSON(b, &doc); err != nil {
				return err
			}
			for _, a := range doc.Applications {
				if ApplicationShard(a.Key()) != e.Path {
					return fmt.Errorf("application %q belongs in %s", a.Key(), ApplicationShard(a.Key()))
				}
			}
			apps = doc.Applications
		}
		d.nextApps[e.Path+"\x00"+e.SHA256] = apps
		c.Applications = append(c.Applications, apps...)
		return nil
	case dir == projectsDir:
		projects, ok := d.projects[e.Path+"\x00"+e.SHA256]
		if !ok {
			var doc projectsDoc
			if err := strictJSON(b, &doc); err != nil {
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
	}
	return errors.New("not a file of this schema version")
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return errors.New("decode: data after the JSON value")
	}
	return nil
}
