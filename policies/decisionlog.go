package policies

import (
	"context"
	"log/slog"
	"strings"
	"time"
)

func (e *Engine) logEvent(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if e.opts.log != nil {
		e.opts.log.LogAttrs(ctx, level, msg, attrs...)
	}
}

// logDecision writes the decision log line: who, what, the answer and why.
// Never the token, the path (it may carry secrets in its query) or headers.
func (e *Engine) logDecision(ctx context.Context, in *Input, d Decision, start time.Time, err error) {
	l := e.opts.log
	if l == nil || !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	app := ""
	if a := in.Application; a != nil {
		app = a.Namespace + "/" + a.Name
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("user", in.User.ID),
		slog.String("extension", in.Extension),
		slog.String("application", app),
		slog.String("method", in.Request.Method),
		slog.Bool("allow", d.Allow),
		slog.String("reason", d.Reason),
		slog.String("revision", d.Revision),
		slog.Bool("cached", d.Cached),
		slog.Duration("took", time.Since(start)),
	)
	if in.User.Username != "" && in.User.Username != in.User.ID {
		attrs = append(attrs, slog.String("username", in.User.Username))
	}
	msg := "extension decision"
	level := slog.LevelInfo
	if d.Shadow {
		attrs = append(attrs, slog.Bool("shadow", true))
		msg = "extension decision (shadow: would deny)"
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", strings.TrimSpace(err.Error())))
		level = slog.LevelError
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}
