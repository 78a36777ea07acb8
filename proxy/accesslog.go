package proxy

import (
	"log/slog"
	"net/http"
	"time"
)

// access is what the access log says of a request beyond its method,
// path and answer, filled in by serve as it learns each part.
type access struct {
	userID, username                string
	namespace, application, project string
	backend                         string // host:port of the backend URL that answered
	answer                          string // the kind of the proxy's own answer; empty when the backend answered
}

// maxLoggedPath bounds the path in an access log line: a client chooses it.
const maxLoggedPath = 512

// logAccess writes the access log line of an answered request: who asked
// which extension for what, and what came of it. Never the token, the
// query (extensions put search terms and sometimes keys there) or headers;
// the path as the client sent it, escaped, and cut at maxLoggedPath bytes.
// For a WebSocket, the line comes when the connection closes, with status
// 101 and the session's length.
func (p *Proxy) logAccess(r *http.Request, rw *responseWriter, extension string, took time.Duration) {
	l := p.o.AccessLog
	ctx := r.Context()
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	path := r.URL.EscapedPath()
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "..."
	}
	a := &rw.acc
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("extension", extension),
		slog.String("path", path),
		slog.Int("status", rw.code()),
		slog.Int64("bytes", rw.bytes),
		slog.Duration("took", took),
		slog.String("remote", r.RemoteAddr),
	)
	if a.userID != "" {
		attrs = append(attrs, slog.String("user", a.userID))
	}
	if a.username != "" && a.username != a.userID {
		attrs = append(attrs, slog.String("username", a.username))
	}
	if a.application != "" {
		attrs = append(attrs, slog.String("application", a.namespace+"/"+a.application), slog.String("project", a.project))
	}
	if a.backend != "" {
		attrs = append(attrs, slog.String("backend", a.backend))
	}
	if a.answer != "" {
		attrs = append(attrs, slog.String("answer", a.answer))
	}
	l.LogAttrs(ctx, slog.LevelInfo, "extension request", attrs...)
}
