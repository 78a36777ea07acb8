package client

import (
	"errors"
	"fmt"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// errNeedFull: a delta announcement this agent cannot apply; it asks the
// server for the full manifest (ManifestRequest) instead of answering.
var errNeedFull = errors.New("cannot apply the delta")

// manifestOf returns the manifest an announcement describes: the full one
// it carries, or, for a delta, the manifest of its base version as this
// volume holds it with the delta applied. A delta is applied only to
// exactly the base it names, and the result must hash to the announced
// version; otherwise the error wraps errNeedFull. Per-file problems come
// back as FileErrors, as from toManifest.
func (a *Agent) manifestOf(c *agentv1.ConfigAvailable) (*sidecar.Manifest, []*agentv1.FileError, error) {
	base := c.GetBaseVersion()
	if base == "" {
		return toManifest(c, a.o.Limits)
	}
	if c.GetManifest() != nil {
		return nil, nil, fmt.Errorf("announcement of version %q has both a manifest and a delta", c.GetVersion())
	}
	// An entry no agent could take fails the version whatever its base.
	changed, fileErrs, err := toFiles(c.GetVersion(), c.GetChanged())
	if err != nil {
		return nil, fileErrs, err
	}
	// With --confirm-url the version on disk may be newer than the one the
	// proxy serves (and the server names); the writer keeps the version
	// before the current one, so the base is usually still there.
	bm, err := a.o.Writer.Manifest(base)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: base version %s: %w", errNeedFull, base, err)
	}
	files, err := applyDelta(bm.Files, changed, c.GetRemoved())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: from %s to %s: %w", errNeedFull, base, c.GetVersion(), err)
	}
	if v := snapshot.VersionOf(files); v != c.GetVersion() {
		return nil, nil, fmt.Errorf("%w: from %s: the result is version %s, not the announced %s", errNeedFull, base, v, c.GetVersion())
	}
	return newManifest(c.GetVersion(), files, a.o.Limits)
}

// applyDelta puts every entry of changed into base (replacing the entry
// with its path, or added) and takes every path of removed out. base,
// changed and removed must each be sorted by path without repeats, every
// removed path must be in base and none may also be changed: anything else
// is not a delta this server could have sent. The result is sorted.
func applyDelta(base, changed []snapshot.FileMeta, removed []string) ([]snapshot.FileMeta, error) {
	for i := 1; i < len(changed); i++ {
		if changed[i-1].Path >= changed[i].Path {
			return nil, fmt.Errorf("changed entries not sorted or repeated at %q", changed[i].Path)
		}
	}
	for i := 1; i < len(removed); i++ {
		if removed[i-1] >= removed[i] {
			return nil, fmt.Errorf("removed paths not sorted or repeated at %q", removed[i])
		}
	}
	out := make([]snapshot.FileMeta, 0, len(base)+len(changed))
	i, j, k := 0, 0, 0
	for i < len(base) || j < len(changed) {
		if j < len(changed) && (i == len(base) || changed[j].Path <= base[i].Path) {
			if i < len(base) && changed[j].Path == base[i].Path {
				i++ // replaced
			}
			out = append(out, changed[j])
			j++
			continue
		}
		p := base[i].Path
		if k < len(removed) && removed[k] < p {
			return nil, fmt.Errorf("removed path %q is not in the base version (or also changed)", removed[k])
		}
		if k < len(removed) && removed[k] == p {
			k++
			i++
			continue
		}
		out = append(out, base[i])
		i++
	}
	if k < len(removed) {
		return nil, fmt.Errorf("removed path %q is not in the base version (or also changed)", removed[k])
	}
	return out, nil
}
