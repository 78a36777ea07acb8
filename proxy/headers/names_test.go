package headers

import (
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// readings are the ways a backend may read a header name, written here
// independently of the proxy's rule: each maps a name to the key the
// backend looks it up by.
var readings = map[string]func(string) string{
	// Python's WSGI, Ruby's Rack, nginx's FastCGI parameters.
	"CGI": func(n string) string { return "HTTP_" + strings.ToUpper(strings.ReplaceAll(n, "-", "_")) },
	// PHP over CGI: also '.' and ' ' as '_' in $_SERVER's keys.
	"PHP": func(n string) string {
		return "HTTP_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(n))
	},
	"Go":   textproto.CanonicalMIMEHeaderKey,
	"Node": strings.ToLower,
}

// ownedNames are names the proxy sets or removes; every spelling of them a
// reading merges with them must stay behind.
var ownedNames = []string{
	username, userID, userGroups, ApplicationName, ProjectName, namespace, targetClusterName, targetClusterURL,
	"Argocd-Anything", "Authorization", "Cookie", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
	"X-Forwarded-Prefix", "X-Real-Ip", "Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade",
}

// spellings are a name as a client may send it to pass for it under some
// reading.
func spellings(name string) []string {
	return []string{
		name, strings.ToLower(name), strings.ToUpper(name),
		strings.ReplaceAll(name, "-", "_"), strings.ToLower(strings.ReplaceAll(name, "-", "_")),
		strings.ReplaceAll(name, "-", "."), strings.Replace(name, "-", "_", 1),
	}
}

func TestOwnedSpellingsNeverCross(t *testing.T) {
	for _, name := range ownedNames {
		for _, s := range spellings(name) {
			if crosses(s) {
				t.Errorf("%q (a spelling of %s) crosses", s, name)
			}
		}
	}
}

func TestOrdinaryNamesCross(t *testing.T) {
	for _, name := range []string{"Accept", "Content-Type", "X-Api-Key", "Sec-Websocket-Key", "X-Request-Id", "Grpc-Timeout",
		"Argocd", "Xforwarded-For", "X-Forwardedfor", "Authorization2", "Cookies", "Te2", "Upgrade-Insecure-Requests"} {
		if !crosses(name) {
			t.Errorf("%q does not cross", name)
		}
	}
}

// TestRequestUnderEveryReading: a client sends every identity header under
// every spelling; under each reading a backend may use, the identity keys
// it sees are exactly the trusted ones, with the trusted values.
func TestRequestUnderEveryReading(t *testing.T) {
	in := http.Header{}
	for _, name := range ownedNames {
		for _, s := range spellings(name) {
			in[s] = []string{"spoof"}
		}
	}
	in["Accept"] = []string{"*/*"}
	id := &Identity{Username: "alice", UserID: "alice-id", Groups: []string{"team-a"}, Application: "ns:app", Project: "p",
		Namespace: "gitops", ClusterName: "prod", ClusterURL: "https://prod"}
	out := Request(in, &Outgoing{RemoteAddr: "10.0.0.1:1", Identity: id}, nil)
	trusted := map[string]string{username: "alice", userID: "alice-id", userGroups: "team-a", ApplicationName: "ns:app",
		ProjectName: "p", namespace: "gitops", targetClusterName: "prod", targetClusterURL: "https://prod"}
	for reading, read := range readings {
		for _, name := range ownedNames {
			var seen []string
			for got, v := range out {
				if read(got) == read(name) {
					seen = append(seen, got+": "+strings.Join(v, ","))
				}
			}
			want, isIdentity := trusted[name]
			switch {
			case isIdentity && (len(seen) != 1 || seen[0] != name+": "+want):
				t.Errorf("%s reading: %s is %q, want only the trusted %q", reading, name, seen, want)
			case !isIdentity && len(seen) > 0 && !strings.HasPrefix(name, "X-Forwarded-"):
				t.Errorf("%s reading: %s reached the backend as %q", reading, name, seen)
			}
		}
	}
	if out.Get("Accept") != "*/*" {
		t.Error("an ordinary header was dropped")
	}
}

func TestAllowed(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"X-Api-Key", true},
		{"Authorization", true}, // the backend's credential, configured
		{"Cookie", true},
		{"Argocd-Username", false},
		{"Argocd_Username", false},
		{"Argocd.User.Groups", false},
		{"X-Api_Key", false},
		{"X-Forwarded-For", false},
		{"X_Forwarded_Host", false},
		{"X-Real-Ip", false},
		{"Forwarded", false},
		{"Proxy-Authorization", false},
		{"Connection", false},
		{"Transfer-Encoding", false},
		{"X Bad", false},
		{"X-Bad:", false},
		{"", false},
	} {
		if got := Allowed(tt.name, "v"); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzCrosses: a name that crosses is, under no reading, an owned name or
// one of the owned prefixes.
func FuzzCrosses(f *testing.F) {
	for _, s := range []string{"Argocd-Username", "argocd_user_groups", "X-Forwarded-For", "Accept", "Argocd.User-Id", "x-real-ip"} {
		f.Add(s)
	}
	prefixes := []string{"Argocd-", "X-Forwarded-", "Proxy-"}
	f.Fuzz(func(t *testing.T, name string) {
		if !crosses(name) {
			return
		}
		if strings.Contains(name, "_") {
			t.Fatalf("%q holds '_' and crosses", name)
		}
		for reading, read := range readings {
			got := read(name)
			for _, owned := range ownedNames {
				if got == read(owned) {
					t.Fatalf("%q crosses but reads as %s under %s", name, owned, reading)
				}
			}
			for _, p := range prefixes {
				if rp := read(p); len(got) >= len(rp) && strings.EqualFold(got[:len(rp)], rp) {
					t.Fatalf("%q crosses but reads as %s* under %s", name, p, reading)
				}
			}
		}
	})
}
