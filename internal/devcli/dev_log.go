package devcli

import (
	"context"
	"log/slog"
)

// versionMessages are the lines each part writes once per snapshot version:
// the controller built it, the proxy serves it, the agent acknowledged it
// (it reports APPLIED only once the proxy serves the version).
var versionMessages = map[string]bool{"snapshot built": true, "snapshot served": true, "snapshot applied": true}

// versionLines is the parts' log in gatehouse dev: their warnings and
// errors, and of their information only the line per version, so that an
// edit shows as three lines; --verbose lets every line through.
type versionLines struct {
	slog.Handler
	verbose bool
}

func (h versionLines) Handle(ctx context.Context, r slog.Record) error {
	if !h.verbose && r.Level < slog.LevelWarn && !versionMessages[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h versionLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	return versionLines{h.Handler.WithAttrs(attrs), h.verbose}
}

func (h versionLines) WithGroup(name string) slog.Handler {
	return versionLines{h.Handler.WithGroup(name), h.verbose}
}
