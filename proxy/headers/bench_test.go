package headers

import (
	"net/http"
	"testing"
)

// BenchmarkRequest is the header policy of one typical browser request:
// what the proxy spends on it per request, whatever else runs.
func BenchmarkRequest(b *testing.B) {
	in := http.Header{
		"Accept": {"application/json"}, "Accept-Encoding": {"gzip, deflate, br"}, "Accept-Language": {"en-US,en;q=0.9"},
		"Authorization": {"Bearer x"}, "Cookie": {"argocd.token=x"}, "User-Agent": {"Mozilla/5.0"},
		"Argocd-Application-Name": {"team-a:web"}, "Argocd-Project-Name": {"team-a"}, "Sec-Fetch-Mode": {"cors"},
		"Sec-Fetch-Site": {"same-origin"}, "Referer": {"https://argocd.example/applications"}, "Connection": {"keep-alive"},
		"X-Forwarded-For": {"10.0.0.1"}, "X-Forwarded-Proto": {"https"},
	}
	o := &Outgoing{RemoteAddr: "10.0.0.2:5555", Host: "argocd.example", TLS: true,
		Identity: &Identity{Username: "alice", UserID: "alice", Groups: []string{"team-a"}, Application: "team-a:web", Project: "team-a", Namespace: "argocd"}}
	out := make(http.Header, 24)
	b.ReportAllocs()
	for b.Loop() {
		clear(out)
		Request(in, o, out)
	}
}

// BenchmarkCleanResponse is the response policy of a response setting one
// cookie.
func BenchmarkCleanResponse(b *testing.B) {
	scope := &CookieScope{Extension: "metrics", RequestPath: "/extensions/metrics/api/query"}
	b.ReportAllocs()
	for b.Loop() {
		h := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"s=1; Path=/extensions/metrics; HttpOnly"}}
		CleanResponse(h, false, scope)
	}
}
