// Package headers owns which headers cross the extension proxy: what is
// removed from a client's request (credentials, hop-by-hop and Proxy-*
// headers, and every Argocd-* header a client sends), the trusted identity
// headers set in their place, and what is removed from a backend's response.
// Configured and policy headers can never override an identity header.
package headers
