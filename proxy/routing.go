package proxy

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// Prefixes extensions are served under: the proposal's, and the one Argo
// CD's UI extensions call today, so they work unchanged when the ingress
// sends that prefix here.
var prefixes = []string{"/api/v1/extensions/", "/extensions/"}

// extensionName is Argo CD's rule for extension names.
var extensionName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// route is a request's extension and the rest of its path, still escaped:
// "" or "/…", checked by checkPath.
type route struct {
	extension string
	rest      string
}

// routeRequest is the stage that reads the extension and the rest of the
// path a request is for, once the proxy serves a snapshot.
func (x *exchange) routeRequest() *problem {
	if x.t == nil {
		return &problem{status: http.StatusServiceUnavailable, kind: "unavailable", reason: "the proxy has not loaded its configuration yet: try again shortly", retryAfter: 1}
	}
	if x.r.Method == http.MethodConnect {
		return &problem{status: http.StatusMethodNotAllowed, kind: "method not allowed", reason: "this is a reverse proxy for Argo CD extensions, not a forward proxy"}
	}
	var prob *problem
	x.route, prob = parsePath(x.r.URL.EscapedPath())
	return prob
}

// parsePath splits an escaped request path into the extension and the rest.
func parsePath(escaped string) (route, *problem) {
	for _, prefix := range prefixes {
		after, ok := strings.CutPrefix(escaped, prefix)
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(after, "/")
		if !extensionName.MatchString(name) {
			return route{}, notFound("no extension is named " + quoteShort(name) +
				": extension names hold only letters, digits, '-' and '_'")
		}
		if rest != "" || strings.HasSuffix(after, "/") {
			rest = "/" + rest
		}
		if reason := checkPath(rest); reason != "" {
			return route{}, badRequest(reason)
		}
		return route{extension: name, rest: rest}, nil
	}
	return route{}, notFound("not an extension path: extensions are served under /api/v1/extensions/<name>/ and /extensions/<name>/")
}

// maxUnescapes bounds how often a segment is percent-decoded looking for a
// traversal: a segment still encoded after that is refused.
const maxUnescapes = 3

// checkPath refuses a path that could leave the extension's prefix, reach
// another extension or climb above the service's path in any server that
// decodes it once more, or normalizes it: a segment that decodes (once or
// repeatedly) to "." or "..", or holds a slash, a backslash, a ';' (path
// parameters) or a control character. It returns why, or "".
func checkPath(rest string) string {
	if rest == "" {
		return ""
	}
	for seg := range strings.SplitSeq(rest[1:], "/") {
		d := seg
		for i := 0; ; i++ {
			if strings.ContainsAny(d, `\;`) || d == "." || d == ".." || hasControl(d) {
				return "the path holds a segment the proxy does not forward (\".\", \"..\", '\\', ';' or a control character, " +
					"possibly percent-encoded): extension paths stay below their prefix"
			}
			if !strings.Contains(d, "%") {
				break
			}
			if i == maxUnescapes {
				return "the path is percent-encoded more than " + strconv.Itoa(maxUnescapes) + " times over"
			}
			u, err := url.PathUnescape(d)
			if err != nil {
				return "the path holds an invalid percent-encoding"
			}
			if strings.Contains(u, "/") {
				return "the path holds an encoded '/' (%2F): extension paths stay below their prefix"
			}
			d = u
		}
	}
	return ""
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// backendPath joins the service URL's escaped path (kept, unlike Argo CD)
// and the request's rest, both escaped, and returns the decoded and escaped
// forms for url.URL.
func backendPath(base, rest string) (decoded, escaped string) {
	escaped = strings.TrimSuffix(base, "/") + rest
	if escaped == "" {
		escaped = "/"
	}
	decoded, err := url.PathUnescape(escaped)
	if err != nil { // checkPath and the snapshot's validation rule this out
		return escaped, escaped
	}
	return decoded, escaped
}

// The query parameters a WebSocket handshake names its Application and
// project with: browsers cannot set headers on one.
const (
	queryApplication = "argocd-application-name"
	queryProject     = "argocd-project-name"
)

// withoutAppParams is rawQuery less the parameters a WebSocket handshake
// names its Application and project with, under any reading a backend may
// give a parameter's name (percent-decoded, in any case, '_' or other
// punctuation for '-'), so no backend takes a client's word for them. '&'
// and ';' both end a parameter here, as some servers read ';' too. The rest
// keeps its order and its bytes.
func withoutAppParams(rawQuery string) string {
	var b strings.Builder
	start, kept, removed := 0, 0, false
	for i := 0; i <= len(rawQuery); i++ {
		if i < len(rawQuery) && rawQuery[i] != '&' && rawQuery[i] != ';' {
			continue
		}
		param := rawQuery[start:i]
		switch {
		case isAppParam(param):
			if !removed {
				b.WriteString(rawQuery[:kept])
				removed = true
			}
		case removed:
			if b.Len() > 0 {
				b.WriteByte(rawQuery[start-1])
			}
			b.WriteString(param)
		default:
			kept = i
		}
		start = i + 1
	}
	if !removed {
		return rawQuery
	}
	return b.String()
}

// isAppParam reports whether a query parameter ("name=value") is one that
// names the Application or its project.
func isAppParam(param string) bool {
	name, _, _ := strings.Cut(param, "=")
	if decoded, err := url.QueryUnescape(name); err == nil {
		name = decoded
	}
	return headers.SameName(name, queryApplication) || headers.SameName(name, queryProject)
}

// appRef is the Application a request names.
type appRef struct {
	namespace, name, project string
}

// parseAppRef reads the Application (Argocd-Application-Name,
// "<namespace>:<name>" as Argo CD sends it or "<namespace>/<name>") and its
// project (Argocd-Project-Name). A WebSocket handshake may name them in the
// query instead; the caller removes those parameters before forwarding.
func parseAppRef(r *http.Request, websocket bool) (appRef, *problem) {
	app, ok, p := single(r, headers.ApplicationName, queryApplication, websocket)
	if p != nil {
		return appRef{}, p
	}
	if !ok {
		return appRef{}, badRequest("this extension serves Applications: send the Application as header " + headers.ApplicationName +
			": <namespace>:<name>, and its project as " + headers.ProjectName + wsHint(websocket))
	}
	project, ok, p := single(r, headers.ProjectName, queryProject, websocket)
	if p != nil {
		return appRef{}, p
	}
	if !ok {
		return appRef{}, badRequest("send the Application's project as header " + headers.ProjectName + wsHint(websocket))
	}
	ns, name, found := strings.Cut(app, ":")
	if !found {
		ns, name, found = strings.Cut(app, "/")
	}
	switch {
	case !found:
		return appRef{}, badRequest(headers.ApplicationName + " must be <namespace>:<name> (or <namespace>/<name>)")
	case !snapshot.IsDNSLabel(ns):
		return appRef{}, badRequest(headers.ApplicationName + ": " + quoteShort(ns) + " is not a namespace name")
	case !snapshot.IsDNSSubdomain(name):
		return appRef{}, badRequest(headers.ApplicationName + ": " + quoteShort(name) + " is not an Application name")
	case !snapshot.IsDNSSubdomain(project):
		return appRef{}, badRequest(headers.ProjectName + ": " + quoteShort(project) + " is not a project name")
	}
	return appRef{namespace: ns, name: name, project: project}, nil
}

func wsHint(websocket bool) string {
	if websocket {
		return " (a WebSocket handshake may use the query parameters " + queryApplication + " and " + queryProject + ")"
	}
	return ""
}

// single returns the one value of header (or, for a WebSocket handshake
// without the header, of the query parameter); several are a bad request.
func single(r *http.Request, header, param string, websocket bool) (string, bool, *problem) {
	values := r.Header[header]
	where := "header " + header
	if len(values) == 0 && websocket {
		values = r.URL.Query()[param]
		where = "query parameter " + param
	}
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
		return values[0], values[0] != "", nil
	}
	return "", false, badRequest(where + " is given more than once")
}

// quoteShort quotes a value from a request for a message, shortened.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "…"
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < ' ' || r == '"' || r == 0x7f {
			return '?'
		}
		return r
	}, s) + `"`
}
