package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// handle takes one announced version through download, write and
// confirmation, reporting each step on the stream.
func (a *Agent) handle(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement) {
	version := an.config.GetVersion()
	log := a.o.Logger.With("version", version)
	m, fileErrs, err := a.manifestOf(an.config)
	if errors.Is(err, errNeedFull) {
		// Not a verdict on the version: this agent cannot read the delta.
		log.Info("asking for the full manifest", "reason", err)
		if err := s.send(&agentv1.Command{Payload: &agentv1.Command_ManifestRequest{
			ManifestRequest: &agentv1.ManifestRequest{Version: version},
		}}, an.id); err != nil {
			log.Warn("cannot ask for the full manifest", "error", err)
		}
		return
	}
	// The announcement can be large (1 MB at 10,000 files); it is not needed
	// past this point, and the download that follows may take a while.
	an.config = &agentv1.ConfigAvailable{Version: version}
	if err != nil {
		// A hostile or broken manifest: refuse it, never touch the disk.
		log.Error("refusing announced snapshot", "error", err)
		a.o.Metrics.result("rejected")
		_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), fileErrs)
		return
	}
	if err := a.fetchAndWrite(ctx, rpc, s, an, m); err != nil {
		if ctx.Err() != nil {
			return // connection gone: the previous snapshot stays; retried on reconnect
		}
		log.Error("snapshot not written", "error", err)
		a.o.Metrics.result("rejected")
		_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), nil)
		return
	}
	_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_WRITTEN, "", nil)
	if a.confirm != nil {
		if rejected, err := a.confirm.await(ctx, version); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Error("proxy did not take the snapshot", "error", err, "refused", rejected)
			a.o.Metrics.result("rejected")
			_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), nil)
			return
		}
	}
	a.serving.Store(version)
	a.ready.Store(true)
	a.o.Metrics.result("applied")
	log.Info("snapshot applied", "files", len(m.Files))
	_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_APPLIED, "", nil)
}

// errWrite marks a failure of the volume rather than of the download: it is
// not retried.
var errWrite = errors.New("shared volume")

// fetchAndWrite downloads what the volume lacks and writes the version.
// Integrity failures are retried with a fresh download (each failure is
// reported); transport failures end the attempt and leave the previous
// snapshot in place.
func (a *Agent) fetchAndWrite(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement, m *sidecar.Manifest) error {
	if cur, err := a.o.Writer.Current(); err == nil && cur != nil && cur.Version == m.Version {
		return nil
	}
	var lastErr error
	for attempt := 1; attempt <= a.o.DownloadAttempts; attempt++ {
		err := a.install(ctx, rpc, s.serverPacked, m)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || isTransport(err) || errors.Is(err, errWrite) {
			return err
		}
		lastErr = err
		a.o.Metrics.downloadFailed()
		if attempt < a.o.DownloadAttempts {
			_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED,
				fmt.Sprintf("%v (attempt %d of %d, retrying)", err, attempt, a.o.DownloadAttempts), nil)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
	}
	return lastErr
}

// install stages m on the volume (unchanged files are linked from the
// current version), streams the rest straight from the control plane into
// it, and commits. Anything short of a commit leaves no trace.
func (a *Agent) install(ctx context.Context, rpc agentv1.CommanderClient, packed bool, m *sidecar.Manifest) error {
	st, err := a.o.Writer.Begin(m)
	if err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	defer st.Abort()
	if missing := st.Missing(); len(missing) > 0 {
		if err := a.download(ctx, rpc, packed, st, missing); err != nil {
			return err
		}
	}
	if err := st.Commit(); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	return nil
}

// isTransport tells a lost connection from bad data: only bad data is
// worth reporting as a rejection.
func isTransport(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
		return true
	}
	return false
}

// toManifest converts and validates an announcement. Per-file problems are
// returned as FileErrors so the controller's registry can show them.
func toManifest(c *agentv1.ConfigAvailable, l sidecar.Limits) (*sidecar.Manifest, []*agentv1.FileError, error) {
	m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: c.GetVersion()}
	var fileErrs []*agentv1.FileError
	for _, f := range c.GetManifest().GetFiles() {
		kind, err := toKind(f.GetKind())
		if err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: f.GetPath(), Error: err.Error()})
			continue
		}
		if err := sidecar.ValidatePath(f.GetPath()); err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: f.GetPath(), Error: err.Error()})
		}
		m.Files = append(m.Files, sidecar.FileMeta{
			Path: f.GetPath(), SHA256: f.GetSha256(), Size: int64(min(f.GetSize(), 1<<62)),
			Mode: fs.FileMode(f.GetMode()), Kind: kind,
		})
	}
	if len(fileErrs) > 0 {
		return nil, fileErrs, fmt.Errorf("manifest of version %q has %d bad file(s), first: %s: %s",
			c.GetVersion(), len(fileErrs), fileErrs[0].GetPath(), fileErrs[0].GetError())
	}
	if err := m.Validate(l); err != nil {
		return nil, nil, fmt.Errorf("manifest of version %q: %w", c.GetVersion(), err)
	}
	return m, nil, nil
}

func toKind(k agentv1.FileKind) (sidecar.Kind, error) {
	switch k {
	case agentv1.FileKind_FILE_KIND_CONFIG:
		return sidecar.KindConfig, nil
	case agentv1.FileKind_FILE_KIND_SECRET:
		return sidecar.KindSecret, nil
	case agentv1.FileKind_FILE_KIND_POLICY:
		return sidecar.KindPolicy, nil
	}
	return "", fmt.Errorf("unknown file kind %v", k)
}
