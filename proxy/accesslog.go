package proxy

import (
	"log/slog"
	"time"
)

// maxLoggedPath bounds the path in an access log line: a client chooses it.
const maxLoggedPath = 512

// logAccess writes the access log line of an answered request: who asked
// which extension for what, and what came of it. Never the token, the
// query (extensions put search terms and sometimes keys there) or headers;
// the path as the client sent it, escaped, and cut at maxLoggedPath bytes.
// For a WebSocket, the line comes when the connection closes, with status
// 101 and the session's length.
// Every field comes from the exchange, as its stages left it.
func (p *Proxy) logAccess(x *exchange, extension string, took time.Duration) {
	l := p.o.AccessLog
	r, rw := x.r, &x.w
	ctx := r.Context()
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	path := r.URL.EscapedPath()
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "..."
	}
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
	if id := x.id; id != nil {
		if id.UserID != "" {
			attrs = append(attrs, slog.String("user", id.UserID))
		}
		if id.Username != "" && id.Username != id.UserID {
			attrs = append(attrs, slog.String("username", id.Username))
		}
	}
	// As the client named it, known or not.
	if ref := x.ref; ref.name != "" {
		attrs = append(attrs, slog.String("application", ref.namespace+"/"+ref.name), slog.String("project", ref.project))
	}
	if x.forwarded && x.up != nil {
		attrs = append(attrs, slog.String("backend", x.up.url.Host))
	}
	if answer := x.logAnswer(); answer != "" {
		attrs = append(attrs, slog.String("answer", answer))
	}
	l.LogAttrs(ctx, slog.LevelInfo, "extension request", attrs...)
}

// logAnswer is the access log's answer: why the proxy ended a stream, else
// the kind of its own refusal; "" when the backend answered.
func (x *exchange) logAnswer() string {
	if st := x.w.stream; st != nil {
		if reason := st.ended(); reason != "" {
			return "ended: " + string(reason)
		}
	}
	return x.answer
}
