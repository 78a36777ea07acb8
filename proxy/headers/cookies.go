package headers

import "strings"

// Extensions share Argo CD's origin, so a cookie a backend sets is a cookie
// of Argo CD's site. The proxy lets one through only when the browser will
// send it back to that extension's paths and nowhere else, and never one a
// browser would send as Argo CD's own (argocd.token signs the user in).

// SetCookie is what a browser makes of a Set-Cookie line (RFC 6265bis
// section 5.6), as far as the proxy's rule needs it.
type SetCookie struct {
	// Name and Value as the browser stores them: trimmed of spaces and
	// tabs; Name is "" for a nameless cookie ("=v", or no '=' at all).
	Name, Value string
	// Path is the Path attribute's value, "" when there is none or it does
	// not start with '/' (the browser then uses the default path).
	Path string
	// Paths counts the Path attributes; Domain is set when there is a
	// Domain attribute, whatever its value.
	Paths  int
	Domain bool
}

// Limits a browser applies (RFC 6265bis sections 5.6 and 5.7).
const (
	maxCookieNameValue = 4096
	maxAttributeValue  = 1024
)

// ParseSetCookie reads line as RFC 6265bis section 5.6 does. ok is false
// when a browser ignores the line: a control character other than a tab,
// a name and value together over 4096 bytes, neither a name nor a value, or
// a nameless cookie whose value starts with "__Secure-" or "__Host-".
func ParseSetCookie(line string) (c SetCookie, ok bool) {
	for i := 0; i < len(line); i++ {
		if b := line[i]; b < ' ' && b != '\t' || b == 0x7f {
			return SetCookie{}, false
		}
	}
	pair, attrs, _ := strings.Cut(line, ";")
	if name, value, found := strings.Cut(pair, "="); found {
		c.Name, c.Value = trimWSP(name), trimWSP(value)
	} else {
		c.Value = trimWSP(pair)
	}
	switch {
	case len(c.Name)+len(c.Value) > maxCookieNameValue, c.Name == "" && c.Value == "":
		return SetCookie{}, false
	case c.Name == "" && (hasPrefixASCIIFold(c.Value, "__secure-") || hasPrefixASCIIFold(c.Value, "__host-")):
		return SetCookie{}, false
	}
	for attrs != "" {
		var av string
		av, attrs, _ = strings.Cut(attrs, ";")
		name, value, _ := strings.Cut(av, "=")
		name, value = trimWSP(name), trimWSP(value)
		// SameName with an all-letter name is ASCII case-insensitive
		// equality, a browser's comparison.
		switch {
		case SameName(name, "path"):
			c.Paths++
			c.Path = ""
			if strings.HasPrefix(value, "/") {
				c.Path = value
			}
			if len(value) > maxAttributeValue {
				// A browser ignores this attribute and keeps an
				// earlier Path: counted, so the rule refuses it.
				c.Paths++
			}
		case SameName(name, "domain"):
			c.Domain = true
		}
	}
	return c, true
}

// CookieScope is where a backend's cookies may apply: the extension's
// paths, /extensions/<name> and /api/v1/extensions/<name> and below.
type CookieScope struct {
	Extension string
	// RequestPath is the path the browser requested (escaped), from which
	// it takes a cookie's default path.
	RequestPath string
}

// CookieAllowed reports whether a backend may set the cookie line on Argo
// CD's origin. It must parse as a browser parses it, have a name that is a
// token (so not be nameless: a browser sends a nameless cookie's value
// alone, "=argocd.token=x" as "argocd.token=x") that does not start with
// "argocd." under any reading, have no Domain attribute (that would widen
// it to subdomains), at most one Path attribute, and a path (the Path
// attribute, else the request's default path) at or below one of the
// extension's prefixes.
func CookieAllowed(line string, scope *CookieScope) bool {
	c, ok := ParseSetCookie(line)
	if !ok || !validName(c.Name) || hasPrefixName(c.Name, "argocd-") || c.Domain || c.Paths > 1 {
		return false
	}
	path := c.Path
	if path == "" {
		path = defaultPath(scope.RequestPath)
	}
	return scope.Extension != "" && (below(path, "/extensions/", scope.Extension) || below(path, "/api/v1/extensions/", scope.Extension))
}

// below reports whether path is prefix+name or under it: the paths the
// browser then sends the cookie to are all the extension's.
func below(path, prefix, name string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, name)
	return ok && (rest == "" || rest[0] == '/')
}

// defaultPath is a cookie's path when it names none (RFC 6265bis section
// 5.1.4): the request path up to its last '/', or "/".
func defaultPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if !strings.HasPrefix(p, "/") || i <= 0 {
		return "/"
	}
	return p[:i]
}

// trimWSP trims spaces and tabs, which alone a browser trims.
func trimWSP(s string) string {
	return strings.Trim(s, " \t")
}

// hasPrefixASCIIFold reports whether s starts with prefix (lower-case) in
// any ASCII case, as browsers compare: strings.EqualFold would also match
// Unicode letters that fold to ASCII ones.
func hasPrefixASCIIFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
