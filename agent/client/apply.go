package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// handle takes one announced version through download, write,
// verification and confirmation, reporting each step on the stream. It
// returns a retry, due after a backoff, when the attempt failed for a
// transient reason; see attempt.
func (a *Agent) handle(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement) *retry {
	version := an.config.GetVersion()
	log := a.o.Logger.With("version", version)
	m, fileErrs, err := a.manifestOf(an.config)
	if err == nil || errors.Is(err, errNeedFull) {
		s.proven()
	}
	if errors.Is(err, errNeedFull) {
		// Not a verdict on the version: this agent cannot read the delta.
		log.Info("asking for the full manifest", "reason", err)
		if err := s.send(&agentv1.Command{Payload: &agentv1.Command_ManifestRequest{
			ManifestRequest: &agentv1.ManifestRequest{Version: version},
		}}, an.id); err != nil {
			log.Warn("cannot ask for the full manifest", "error", err)
		}
		return nil
	}
	if err == nil {
		an.inline, err = inlined(an.config)
	}
	// The announcement can be large (1 MB at 10,000 files); it is not needed
	// past this point, and the download that follows may take a while.
	an.config = &agentv1.ConfigAvailable{Version: version}
	if err != nil {
		// A hostile or broken manifest: refuse it, never touch the disk.
		log.Error("refusing announced snapshot", "error", err)
		a.failed(version, agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC, err)
		_ = s.reject(an, agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC, err.Error(), fileErrs)
		return nil
	}
	return a.attempt(ctx, rpc, s, &retry{an: an, m: m,
		backoff: backoff{initial: a.o.RetryInitialBackoff, max: a.o.RetryMaxBackoff}})
}

// retry is a version to try again after a transient failure.
type retry struct {
	an      *announcement
	m       *sidecar.Manifest
	backoff backoff
	timer   *time.Timer // fires when the next attempt is due
}

func (r *retry) stop() {
	if r != nil && r.timer != nil {
		r.timer.Stop()
	}
}

// attempt tries r's version once and reports the outcome: APPLIED, or
// REJECTED with its class. A deterministic rejection is final (the control
// plane does not offer the version to this agent instance again); after a
// transient one attempt returns r, due again after a jittered, capped
// backoff, and the control plane keeps offering the version whenever the
// agent reconnects.
func (a *Agent) attempt(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, r *retry) *retry {
	version := r.m.Version
	log := a.o.Logger.With("version", version)
	err := a.apply(ctx, rpc, s, r.an, r.m)
	if err == nil {
		a.health.served(version)
		a.o.Metrics.result("applied")
		log.Info("snapshot applied", "files", len(r.m.Files))
		_ = s.status(r.an, agentv1.ConfigState_CONFIG_STATE_APPLIED, "", nil)
		return nil
	}
	if ctx.Err() != nil {
		return nil // connection gone: the previous snapshot stays; offered again on reconnect
	}
	class := classify(err)
	a.failed(version, class, err)
	if class != agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
		log.Error("snapshot rejected", "error", err)
		_ = s.reject(r.an, class, err.Error(), nil)
		return nil
	}
	wait := r.backoff.next()
	log.Warn("snapshot not applied; trying again", "error", err, "in", wait.Round(time.Millisecond))
	_ = s.reject(r.an, class, fmt.Sprintf("%v (trying again in %s)", err, wait.Round(time.Millisecond)), nil)
	r.timer = time.NewTimer(wait)
	return r
}

// failed records a failed attempt in the agent's health and metrics.
func (a *Agent) failed(version string, class agentv1.RejectionClass, err error) {
	a.health.failed(version, class, err)
	a.o.Metrics.failure(class)
	if class != agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
		a.o.Metrics.result("rejected")
	}
}

// apply downloads and writes m (unless the volume serves it intact
// already), reports WRITTEN and, with --confirm-url, waits for the proxy to
// serve it.
func (a *Agent) apply(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement, m *sidecar.Manifest) error {
	if err := a.fetchAndWrite(ctx, rpc, s, an, m); err != nil {
		return err
	}
	_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_WRITTEN, "", nil)
	if a.confirm == nil {
		return nil
	}
	err := a.confirm.await(ctx, m.Version)
	if err == nil || classify(err) == agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
		return err
	}
	// The proxy refused the version. Before that counts against the content
	// (deterministic: not offered again), make sure the volume holds it as
	// written: between full checks the agent does not re-read files carried
	// from the version before, and the proxy's loader refuses any file that
	// was damaged on the volume. A damaged version is marked so, and the
	// retry writes it whole.
	// The proxy reports the refusal until it loads the version again, so the
	// retry's wait must not take this one for its own (confirmer.blame).
	if _, verr := a.o.Writer.VerifyCurrent(); verr != nil {
		if re := (*refusedError)(nil); errors.As(err, &re) {
			a.confirm.blame(re.refusal)
		}
		return transient(fmt.Errorf("%w; the volume does not hold the version as written: %w", err, verr))
	}
	return err
}

// fetchAndWrite downloads what the volume lacks and writes the version.
// Content that does not match its hashes is downloaded again, up to
// DownloadAttempts times (each failure is reported as transient); the last
// failure is the content's and so deterministic. Failures of the volume, the
// connection or the control plane end the attempt at once: they are
// transient, and attempt retries them after a backoff.
func (a *Agent) fetchAndWrite(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement, m *sidecar.Manifest) error {
	if cur, err := a.o.Writer.Current(); err == nil && cur != nil && cur.Version == m.Version {
		if _, err := a.o.Writer.CheckCurrent(); err == nil {
			return nil
		}
		// Damaged on the volume: Begin sees it too and writes it afresh.
	}
	var lastErr error
	for attempt := 1; attempt <= a.o.DownloadAttempts; attempt++ {
		// Content sent with the announcement is tried once: a retry after
		// content that did not match downloads it.
		inline := an.inline
		if attempt > 1 {
			inline = nil
		}
		err := a.install(ctx, rpc, s.serverPacked, m, inline)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || classify(err) == agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
			return err
		}
		lastErr = err
		a.o.Metrics.downloadFailed()
		if attempt < a.o.DownloadAttempts {
			_ = s.reject(an, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT,
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
// it, commits, and checks the result (sidecar.Writer.CheckCurrent: every
// file was hashed as it was written or linked, or carries the proof of the
// file it is linked from). Anything short of a commit leaves no trace; a
// current version found damaged while staging, or a commit that does not
// verify, is a transient failure, and the next attempt writes the version
// afresh.
func (a *Agent) install(ctx context.Context, rpc agentv1.CommanderClient, packed bool, m *sidecar.Manifest, inline map[string][]byte) error {
	st, err := a.o.Writer.Begin(m)
	if errors.Is(err, sidecar.ErrDamaged) {
		return transient(err)
	}
	if err != nil {
		return err
	}
	defer st.Abort()
	missing, n, err := writeInline(st, st.Missing(), inline)
	if err != nil {
		return err
	}
	a.o.Metrics.downloaded(n)
	if len(missing) > 0 {
		if err := a.download(ctx, rpc, packed, st, missing); err != nil {
			return err
		}
	}
	if err := st.Commit(); err != nil {
		return err
	}
	if _, err := a.o.Writer.CheckCurrent(); err != nil {
		return transient(fmt.Errorf("the version as written does not verify: %w", err))
	}
	return nil
}

// toManifest converts and validates a full announcement. Per-file problems
// are returned as FileErrors so the controller's registry can show them.
func toManifest(c *agentv1.ConfigAvailable, l sidecar.Limits) (*sidecar.Manifest, []*agentv1.FileError, error) {
	cols := c.GetManifestColumns()
	if cols == nil {
		files, fileErrs, err := toFiles(c.GetVersion(), c.GetManifest().GetFiles())
		if err != nil {
			return nil, fileErrs, err
		}
		return newManifest(c.GetVersion(), files, l)
	}
	if c.GetManifest() != nil {
		return nil, nil, fmt.Errorf("announcement of version %q has both a manifest and its columns", c.GetVersion())
	}
	files, err := cols.Files()
	if err != nil {
		return nil, nil, fmt.Errorf("manifest of version %q: %w", c.GetVersion(), err)
	}
	var fileErrs []*agentv1.FileError
	for _, f := range files {
		if err := sidecar.ValidatePath(f.Path); err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: f.Path, Error: err.Error()})
		}
	}
	if err := badFiles(c.GetVersion(), fileErrs); err != nil {
		return nil, fileErrs, err
	}
	return newManifest(c.GetVersion(), files, l)
}

// badFiles is the error for a manifest with per-file problems, nil without.
func badFiles(version string, fileErrs []*agentv1.FileError) error {
	if len(fileErrs) == 0 {
		return nil
	}
	return fmt.Errorf("manifest of version %q has %d bad file(s), first: %s: %s",
		version, len(fileErrs), fileErrs[0].GetPath(), fileErrs[0].GetError())
}

// toFiles converts announced entries, checking each one's kind and path:
// the one place the agent turns the protocol's FileMetas into the snapshot
// model.
func toFiles(version string, wire []*agentv1.FileMeta) ([]snapshot.FileMeta, []*agentv1.FileError, error) {
	files := make([]snapshot.FileMeta, 0, len(wire))
	var fileErrs []*agentv1.FileError
	for _, w := range wire {
		f, err := w.SnapshotFileMeta()
		if err == nil {
			err = sidecar.ValidatePath(f.Path)
		}
		if err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: w.GetPath(), Error: err.Error()})
			continue
		}
		files = append(files, f)
	}
	if err := badFiles(version, fileErrs); err != nil {
		return nil, fileErrs, err
	}
	return files, nil, nil
}

// newManifest is the volume's manifest of a version with these files,
// validated against the agent's limits.
func newManifest(version string, files []snapshot.FileMeta, l sidecar.Limits) (*sidecar.Manifest, []*agentv1.FileError, error) {
	m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: version, Files: files}
	if err := m.Validate(l); err != nil {
		return nil, nil, fmt.Errorf("manifest of version %q: %w", version, err)
	}
	return m, nil, nil
}
