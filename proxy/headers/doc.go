// Package headers owns which headers cross the extension proxy: what is
// removed from a client's request (credentials, hop-by-hop and Proxy-*
// headers, Argocd-* and X-Forwarded-* headers, under every spelling a
// backend may read as one of them, and every name holding '_'), the trusted
// identity headers set in their place, which trailers cross either way, and
// what is removed from a backend's response (hop-by-hop headers, and every
// cookie but those scoped to the extension's own paths, read as browsers
// read Set-Cookie). Configured and policy headers can never override an
// identity header.
package headers
