package client

import (
	"errors"
	"fmt"
	"io/fs"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
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
	// With --confirm-url the version on disk may be newer than the one the
	// proxy serves (and the server names); the writer keeps the version
	// before the current one, so the base is usually still there.
	bm, err := a.o.Writer.Manifest(base)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: base version %s: %w", errNeedFull, base, err)
	}
	files, err := applyDelta(toProtoFiles(bm.Files), c.GetChanged(), c.GetRemoved())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: from %s to %s: %w", errNeedFull, base, c.GetVersion(), err)
	}
	if v := agentv1.ManifestVersion(files); v != c.GetVersion() {
		return nil, nil, fmt.Errorf("%w: from %s: the result is version %s, not the announced %s", errNeedFull, base, v, c.GetVersion())
	}
	return toManifest(&agentv1.ConfigAvailable{Version: c.GetVersion(), Manifest: &agentv1.Manifest{Files: files}}, a.o.Limits)
}

// applyDelta puts every entry of changed into base (replacing the entry
// with its path, or added) and takes every path of removed out. base,
// changed and removed must each be sorted by path without repeats, every
// removed path must be in base and none may also be changed: anything else
// is not a delta this server could have sent. The result is sorted.
func applyDelta(base, changed []*agentv1.FileMeta, removed []string) ([]*agentv1.FileMeta, error) {
	for i := 1; i < len(changed); i++ {
		if changed[i-1].GetPath() >= changed[i].GetPath() {
			return nil, fmt.Errorf("changed entries not sorted or repeated at %q", changed[i].GetPath())
		}
	}
	for i := 1; i < len(removed); i++ {
		if removed[i-1] >= removed[i] {
			return nil, fmt.Errorf("removed paths not sorted or repeated at %q", removed[i])
		}
	}
	out := make([]*agentv1.FileMeta, 0, len(base)+len(changed))
	i, j, k := 0, 0, 0
	for i < len(base) || j < len(changed) {
		if j < len(changed) && (i == len(base) || changed[j].GetPath() <= base[i].GetPath()) {
			if i < len(base) && changed[j].GetPath() == base[i].GetPath() {
				i++ // replaced
			}
			out = append(out, changed[j])
			j++
			continue
		}
		p := base[i].GetPath()
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

// toProtoFiles is the inverse of toManifest's conversion, for a manifest
// the writer read back from the volume.
func toProtoFiles(files []sidecar.FileMeta) []*agentv1.FileMeta {
	out := make([]*agentv1.FileMeta, len(files))
	backing := make([]agentv1.FileMeta, len(files)) // one allocation, not 10,000
	for i, f := range files {
		backing[i].Path, backing[i].Sha256, backing[i].Size = f.Path, f.SHA256, uint64(f.Size)
		backing[i].Mode, backing[i].Kind = uint32(f.Mode&fs.ModePerm), fromKind(f.Kind)
		out[i] = &backing[i]
	}
	return out
}

func fromKind(k sidecar.Kind) agentv1.FileKind {
	switch k {
	case sidecar.KindConfig:
		return agentv1.FileKind_FILE_KIND_CONFIG
	case sidecar.KindSecret:
		return agentv1.FileKind_FILE_KIND_SECRET
	case sidecar.KindPolicy:
		return agentv1.FileKind_FILE_KIND_POLICY
	}
	return agentv1.FileKind_FILE_KIND_UNSPECIFIED
}
