package headers

// A backend may read a header name in several ways: byte for byte, without
// case (Go's textproto canonicalisation, Node's lower-casing), or the CGI
// way (upper-cased, '-' read as '_', "HTTP_" in front: Python's WSGI, PHP,
// Ruby's Rack, some Java and Node frameworks), where PHP also reads '.' and
// ' ' as '_'. Under CGI's reading "Argocd_User_Groups" is the trusted
// "Argocd-User-Groups". So the proxy compares names as the most lenient of
// them reads them: ASCII letters without case, and every byte that is not a
// letter or a digit as '-'. Names holding '_' do not cross at all (nginx's
// default): no reading can then merge two names the proxy tells apart.

// owned reports whether a client's header (or trailer) named name is one the
// proxy sets or removes, under any reading a backend may give the name: the
// credentials (Authorization, Cookie), Argocd-*, X-Forwarded-*, Forwarded,
// X-Real-Ip, Proxy-* and the hop-by-hop headers.
func owned(name string) bool {
	return proxySet(name) || credential(name)
}

// crosses reports whether a client's header named name reaches the backend:
// a field name without '_' that the proxy does not own. (net/http refuses
// a request with a name that is not a field name; it is checked again here
// so the rule stands on its own.)
func crosses(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '_' || !isTokenByte(c) {
			return false
		}
	}
	return !owned(name)
}

// SameName reports whether a and b are the same name under every reading:
// ASCII letters without case, and any other byte that is not a digit read
// as '-'.
func SameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if fold(a[i]) != fold(b[i]) {
			return false
		}
	}
	return true
}

// proxySet are the names only the proxy sets toward a backend, so that no
// configured, policy or client header can pass for them.
func proxySet(name string) bool {
	if name == "" {
		return false
	}
	switch fold(name[0]) {
	case 'a':
		return hasPrefixName(name, "argocd-")
	case 'c':
		return SameName(name, "connection")
	case 'f':
		return SameName(name, "forwarded")
	case 'k':
		return SameName(name, "keep-alive")
	case 'p':
		return hasPrefixName(name, "proxy-")
	case 't':
		return SameName(name, "te") || SameName(name, "trailer") || SameName(name, "transfer-encoding")
	case 'u':
		return SameName(name, "upgrade")
	case 'x':
		return hasPrefixName(name, "x-forwarded-") || SameName(name, "x-real-ip")
	}
	return false
}

// credential are the user's Argo CD credentials, which no backend gets
// from the client.
func credential(name string) bool {
	return SameName(name, "authorization") || SameName(name, "cookie")
}

// hasPrefixName reports whether name starts with prefix under every reading;
// prefix is lower-case.
func hasPrefixName(name, prefix string) bool {
	return len(name) >= len(prefix) && SameName(name[:len(prefix)], prefix)
}

// fold is how the most lenient reader sees a byte of a name.
func fold(c byte) byte {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return c
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	}
	return '-'
}

// validName reports whether name is an HTTP field name (RFC 9110 section
// 5.1: a token).
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenByte(name[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
