package snapshot

import "strings"

// IsDNSLabel is Kubernetes' rule for namespace names (RFC 1123 label).
func IsDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// IsDNSSubdomain is Kubernetes' rule for object names (RFC 1123
// subdomain), which Applications and AppProjects follow.
func IsDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	// SplitSeq, not Split: the proxy checks two names on every request,
	// and Split allocated a slice for each.
	for label := range strings.SplitSeq(s, ".") {
		if !IsDNSLabel(label) {
			return false
		}
	}
	return true
}
