package headers

import (
	"net/http"
	"slices"
	"testing"
)

func keys(h http.Header) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	})
}

func TestRequestRemovesWhatNoBackendGets(t *testing.T) {
	in := http.Header{
		"Cookie": {"argocd.token=x"}, "Authorization": {"Bearer x"}, "Argocd-Username": {"admin"}, "Argocd-Whatever": {"x"},
		"Connection": {"keep-alive, X-Named"}, "X-Named": {"hop"}, "Keep-Alive": {"5"}, "Proxy-Authorization": {"x"},
		"Proxy-Connection": {"keep-alive"}, "Te": {"trailers"}, "Trailer": {"X"}, "Transfer-Encoding": {"chunked"},
		"Upgrade": {"websocket"}, "Forwarded": {"for=1.2.3.4"}, "X-Forwarded-Host": {"evil"}, "X-Forwarded-For": {"1.2.3.4"},
		"Accept": {"application/json"}, "Sec-Websocket-Key": {"k"},
	}
	out := Request(in, &Outgoing{RemoteAddr: "10.0.0.7:5555", Host: "argocd.example"}, nil)
	if got := keys(out); !slices.Equal(got, []string{"Accept", "Sec-Websocket-Key", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}) {
		t.Fatalf("left %v", got)
	}
	if out.Get("X-Forwarded-For") != "1.2.3.4, 10.0.0.7" || out.Get("X-Forwarded-Host") != "argocd.example" || out.Get("X-Forwarded-Proto") != "http" {
		t.Fatalf("forwarded headers %v", out)
	}
	if in.Get("Cookie") == "" {
		t.Fatal("the client's header was changed")
	}
	ws := Request(http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Argocd-User-Id": {"x"}}, &Outgoing{WebSocket: true, TLS: true}, nil)
	if ws.Get("Connection") != "Upgrade" || ws.Get("Upgrade") != "websocket" || ws.Get("Argocd-User-Id") != "" || ws.Get("X-Forwarded-Proto") != "https" {
		t.Fatalf("a WebSocket handshake: %v", ws)
	}
}

func TestConfiguredHeadersCannotPassForIdentity(t *testing.T) {
	var configured []Header
	for _, name := range []string{"Argocd-Username", "Argocd-User-Id", "Argocd-Namespace", "X-Forwarded-For", "Connection", "Proxy-Authorization", "Transfer-Encoding"} {
		configured = append(configured, Header{Name: name, Value: "spoof"})
	}
	configured = append(configured, Header{Name: "X-Api-Key", Value: "v"}, Header{Name: "X-Bad", Value: "a\r\nInjected: yes"})
	policy := map[string]string{"argocd-user-groups": "admins", "x-access": "read-only"}
	out := Request(http.Header{}, &Outgoing{Configured: configured, Policy: policy, Identity: &Identity{Username: "alice", UserID: "alice-id",
		Groups: []string{"a", "b"}, Application: "ns:app", Project: "p", Namespace: "ns", ClusterName: "prod", ClusterURL: "https://prod"}}, nil)
	want := map[string]string{username: "alice", userID: "alice-id", userGroups: "a,b", ApplicationName: "ns:app", ProjectName: "p",
		namespace: "ns", targetClusterName: "prod", targetClusterURL: "https://prod", "X-Api-Key": "v", "X-Access": "read-only", "X-Forwarded-Proto": "http"}
	if len(out) != len(want) {
		t.Errorf("headers %v", keys(out))
	}
	for k, v := range want {
		if got := out[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	// Into a header used before and emptied, as the proxy reuses them.
	reused := http.Header{"Stale": {"x"}}
	clear(reused)
	unknown := Request(http.Header{}, &Outgoing{Identity: &Identity{UserID: "u", Username: "line\nbreak"}}, reused)
	if unknown.Get(userID) != "u" || unknown.Get(username) != "" || unknown.Get(ApplicationName) != "" {
		t.Fatalf("unknown or unsendable values were set: %v", unknown)
	}
}

// TestConfiguredHeadersCannotFillAnUnknownIdentity: where the identity has
// no value for a header (a system extension has no Application; a local
// user no groups), a configured or policy header of that name is still not
// sent: setting the identity last cannot override what it does not set.
func TestConfiguredHeadersCannotFillAnUnknownIdentity(t *testing.T) {
	configured := []Header{{Name: ApplicationName, Value: "other-team:app"}, {Name: targetClusterURL, Value: "https://spoof"}}
	policy := map[string]string{"argocd-user-groups": "admins", "argocd-project-name": "other-team"}
	out := Request(http.Header{}, &Outgoing{Configured: configured, Policy: policy,
		Identity: &Identity{Username: "alice", UserID: "alice", Namespace: "gitops"}}, nil)
	for _, name := range []string{ApplicationName, ProjectName, userGroups, targetClusterName, targetClusterURL} {
		if v, ok := out[name]; ok {
			t.Errorf("%s = %q was sent for an identity without one", name, v)
		}
	}
	if out.Get(username) != "alice" || out.Get(namespace) != "gitops" {
		t.Fatalf("identity headers %v", out)
	}
}

// TestRequestValuesAreIndependent: the values Request sets share one array
// but none can be changed through another.
func TestRequestValuesAreIndependent(t *testing.T) {
	out := Request(http.Header{}, &Outgoing{Identity: &Identity{Username: "a", UserID: "b"}}, nil)
	out[username] = append(out[username], "extra")
	if out.Get(userID) != "b" {
		t.Fatal("appending to one header's values changed another's")
	}
}

func TestCleanResponse(t *testing.T) {
	scope := &CookieScope{Extension: "metrics", RequestPath: "/extensions/metrics/api/query"}
	h := http.Header{"Set-Cookie": {"argocd.token=x", "Argocd.Token.0=y", " argocd.other=z", "app=1", "=argocd.token=x; Path=/extensions/metrics"},
		"Connection": {"X-Hop"}, "X-Hop": {"v"}, "Keep-Alive": {"5"}, "Proxy-Authenticate": {"Basic"}, "Content-Type": {"text/plain"}}
	CleanResponse(h, false, scope)
	if !slices.Equal(h["Set-Cookie"], []string{"app=1"}) || len(h) != 2 {
		t.Fatalf("left %v", h)
	}
	only := http.Header{"Set-Cookie": {"argocd.token=x"}}
	CleanResponse(only, false, scope)
	if _, ok := only["Set-Cookie"]; ok {
		t.Fatal("an Argo CD cookie got through")
	}
	sw := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	CleanResponse(sw, true, scope)
	if sw.Get("Upgrade") != "websocket" {
		t.Fatal("a 101's Upgrade was removed")
	}
}

func TestIsWebSocketUpgrade(t *testing.T) {
	for _, tt := range []struct {
		method     string
		connection string
		upgrade    string
		http10     bool
		want       bool
	}{
		{"GET", "Upgrade", "websocket", false, true},
		{"GET", "keep-alive, upgrade", "WebSocket", false, true},
		{"POST", "Upgrade", "websocket", false, false},
		{"GET", "keep-alive", "websocket", false, false},
		{"GET", "Upgrade", "h2c", false, false},
		// HTTP/1.0 has no Upgrade: RFC 9110 section 7.8.
		{"GET", "Upgrade", "websocket", true, false},
	} {
		r, _ := http.NewRequest(tt.method, "http://x/", nil)
		if tt.http10 {
			r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.0", 1, 0
		}
		r.Header.Set("Connection", tt.connection)
		r.Header.Set("Upgrade", tt.upgrade)
		if got := IsWebSocketUpgrade(r); got != tt.want {
			t.Errorf("%+v: %v", tt, got)
		}
	}
}
