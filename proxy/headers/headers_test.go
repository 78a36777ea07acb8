package headers

import (
	"net/http"
	"slices"
	"testing"
)

func TestCleanRequest(t *testing.T) {
	h := http.Header{
		"Cookie": {"argocd.token=x"}, "Authorization": {"Bearer x"}, "Argocd-Username": {"admin"}, "Argocd-Whatever": {"x"},
		"Connection": {"keep-alive, X-Named"}, "X-Named": {"hop"}, "Keep-Alive": {"5"}, "Proxy-Authorization": {"x"},
		"Proxy-Connection": {"keep-alive"}, "Te": {"trailers"}, "Trailer": {"X"}, "Transfer-Encoding": {"chunked"},
		"Upgrade": {"websocket"}, "Forwarded": {"for=1.2.3.4"}, "X-Forwarded-Host": {"evil"}, "X-Forwarded-For": {"1.2.3.4"},
		"Accept": {"application/json"}, "Sec-Websocket-Key": {"k"},
	}
	CleanRequest(h, false)
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"Accept", "Sec-Websocket-Key"}) {
		t.Fatalf("left %v", got)
	}
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Argocd-User-Id": {"x"}}
	CleanRequest(ws, true)
	if ws.Get("Connection") != "Upgrade" || ws.Get("Upgrade") != "websocket" || ws.Get("Argocd-User-Id") != "" {
		t.Fatalf("a WebSocket handshake: %v", ws)
	}
}

func TestConfiguredHeadersCannotPassForIdentity(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{"argocd-username", "Argocd-User-Id", "ARGOCD-NAMESPACE", "X-Forwarded-For", "Connection", "Proxy-Authorization", "Transfer-Encoding"} {
		Add(h, name, "spoof")
	}
	Add(h, "x-api-key", "v")
	Add(h, "X-Bad", "a\r\nInjected: yes")
	if len(h) != 1 || h.Get("X-Api-Key") != "v" {
		t.Fatalf("headers %v: want only X-Api-Key", h)
	}
	SetIdentity(h, &Identity{Username: "alice", UserID: "alice-id", Groups: []string{"a", "b"}, Application: "ns:app", Project: "p",
		Namespace: "ns", ClusterName: "prod", ClusterURL: "https://prod"})
	want := map[string]string{Username: "alice", UserID: "alice-id", UserGroups: "a,b", ApplicationName: "ns:app", ProjectName: "p",
		Namespace: "ns", TargetClusterName: "prod", TargetClusterURL: "https://prod"}
	for k, v := range want {
		if got := h[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	unknown := http.Header{}
	SetIdentity(unknown, &Identity{UserID: "u", Username: "line\nbreak"})
	if len(unknown) != 1 || unknown.Get(UserID) != "u" {
		t.Fatalf("unknown or unsendable values were set: %v", unknown)
	}
}

func TestCleanResponse(t *testing.T) {
	h := http.Header{"Set-Cookie": {"argocd.token=x", "Argocd.Token.0=y", " argocd.other=z", "app=1"}, "Connection": {"X-Hop"},
		"X-Hop": {"v"}, "Keep-Alive": {"5"}, "Proxy-Authenticate": {"Basic"}, "Content-Type": {"text/plain"}}
	CleanResponse(h, false)
	if !slices.Equal(h["Set-Cookie"], []string{"app=1"}) || len(h) != 2 {
		t.Fatalf("left %v", h)
	}
	only := http.Header{"Set-Cookie": {"argocd.token=x"}}
	CleanResponse(only, false)
	if _, ok := only["Set-Cookie"]; ok {
		t.Fatal("an Argo CD cookie got through")
	}
	sw := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	CleanResponse(sw, true)
	if sw.Get("Upgrade") != "websocket" {
		t.Fatal("a 101's Upgrade was removed")
	}
}

func TestIsWebSocketUpgrade(t *testing.T) {
	for _, tt := range []struct {
		method     string
		connection string
		upgrade    string
		want       bool
	}{
		{"GET", "Upgrade", "websocket", true},
		{"GET", "keep-alive, upgrade", "WebSocket", true},
		{"POST", "Upgrade", "websocket", false},
		{"GET", "keep-alive", "websocket", false},
		{"GET", "Upgrade", "h2c", false},
	} {
		r, _ := http.NewRequest(tt.method, "http://x/", nil)
		r.Header.Set("Connection", tt.connection)
		r.Header.Set("Upgrade", tt.upgrade)
		if got := IsWebSocketUpgrade(r); got != tt.want {
			t.Errorf("%+v: %v", tt, got)
		}
	}
}
