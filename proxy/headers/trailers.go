package headers

import "net/http"

// Trailers follow a chunked body (and end an HTTP/2 stream). A receiver
// may merge them into the header section, so they cross the proxy by the
// same name rule as headers, either way, and without the fields RFC 9110
// section 6.5.1 keeps out of trailers that a receiver would act on: framing
// and content handling (Content-*), routing (Host, Location), caching,
// cookies and authentication challenges. gRPC's trailers (Grpc-Status,
// Grpc-Message, ...) pass.

// trailerCrosses reports whether a trailer named name may cross the proxy.
func trailerCrosses(name string) bool {
	if !crosses(name) || hasPrefixName(name, "content-") {
		return false
	}
	for _, barred := range []string{"cache-control", "expires", "host", "location", "set-cookie", "www-authenticate"} {
		if SameName(name, barred) {
			return false
		}
	}
	return true
}

// RequestTrailer is a backend request's trailer map for the trailers a
// client announced: those that may cross, without values until the
// client's body is read (FillTrailer). nil when none may. Trailers the
// client did not announce are not forwarded.
func RequestTrailer(announced http.Header) http.Header {
	var out http.Header
	for name := range announced {
		if trailerCrosses(name) {
			if out == nil {
				out = make(http.Header, len(announced))
			}
			out[name] = nil
		}
	}
	return out
}

// FillTrailer gives each name of to its values in from: the client's
// trailers, once its body is read.
func FillTrailer(to, from http.Header) {
	for name := range to {
		to[name] = from[name]
	}
}

// CleanTrailer removes from a backend response's trailers those that may
// not cross.
func CleanTrailer(h http.Header) {
	for name := range h {
		if !trailerCrosses(name) {
			delete(h, name)
		}
	}
}
