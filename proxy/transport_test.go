package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// withExtension adds x to the snapshot e serves and serves it.
func (e *env) withExtension(x snapshot.Extension) {
	e.t.Helper()
	e.content.Extensions = append(e.content.Extensions, x)
	e.load(e.content)
}

func system(name string, b snapshot.Backend, l snapshot.Limits) snapshot.Extension {
	return snapshot.Extension{Name: name, System: true, Backend: b, Limits: l}
}

func services(urls ...string) []snapshot.Service { return []snapshot.Service{{URLs: urls}} }

// TestBackendFailures: what the client gets when the backend is slow,
// unreachable, or the client itself is too slow or too big.
func TestBackendFailures(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	dead := deadURL(t)
	e := newEnv(t, nil, func(o *Options) {
		o.HeaderTimeout = 300 * time.Millisecond
		o.ClientBodyTimeout = 200 * time.Millisecond
		o.MaxRequestBodyBytes = 1000
	})
	e.withExtension(system("slow", snapshot.Backend{Services: services(hang.URL), RequestTimeout: snapshot.Duration(200 * time.Millisecond)}, snapshot.Limits{}))
	e.withExtension(system("hangs", snapshot.Backend{Services: services(hang.URL)}, snapshot.Limits{}))
	e.withExtension(system("dead", snapshot.Backend{Services: services(dead)}, snapshot.Limits{}))
	alice := token("alice")
	tests := []struct {
		name   string
		req    req
		status int
		reason string
		kind   string
	}{
		{"the backend exceeds the extension's request timeout", req{path: "/api/v1/extensions/slow/x", token: alice}, 504, "did not answer within 200ms", "timeout"},
		{"the backend sends no headers in the proxy's header timeout", req{path: "/api/v1/extensions/hangs/x", token: alice}, 504, "did not answer within 300ms", "timeout"},
		{"the backend is unreachable", req{path: "/api/v1/extensions/dead/x", token: alice}, 502, "unreachable", "unreachable"},
		{"the body is declared too large", req{method: "POST", path: "/api/v1/extensions/audit/x", token: alice, body: strings.Repeat("x", 1001)}, 413, "1000 bytes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do(tt.req)
			if resp.StatusCode != tt.status || !strings.Contains(problemOf(t, body).Reason, tt.reason) {
				t.Fatalf("%d %s, want %d %q", resp.StatusCode, body, tt.status, tt.reason)
			}
			if tt.kind != "" && counter(t, e.reg, "gatehouse_proxy_backend_errors_total", map[string]string{"kind": tt.kind}) == 0 {
				t.Errorf("no backend error of kind %s counted", tt.kind)
			}
		})
	}

	t.Run("a chunked body grows too large", func(t *testing.T) {
		code := rawRequest(t, e, "POST /api/v1/extensions/audit/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+alice+
			"\r\nTransfer-Encoding: chunked\r\n\r\n"+fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", 2000, strings.Repeat("y", 2000)))
		if code != 413 {
			t.Fatalf("status %d, want 413", code)
		}
	})
	t.Run("the client sends its body too slowly", func(t *testing.T) {
		// Ten bytes of a declared hundred, then nothing.
		code := rawRequest(t, e, "POST /api/v1/extensions/audit/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+alice+
			"\r\nContent-Length: 100\r\n\r\n0123456789")
		if code != 408 {
			t.Fatalf("status %d, want 408", code)
		}
	})
}

// rawRequest writes a request as given and returns the response's status.
func rawRequest(t *testing.T, e *env, raw string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// deadURL is a URL nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// TestLimits: per-user and per-extension token buckets answer 429 with
// Retry-After; the concurrency bound answers 503.
func TestLimits(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	held := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
	})
	e := newEnv(t, nil)
	e.withExtension(system("peruser", snapshot.Backend{Services: services(held.URL)}, snapshot.Limits{PerUser: snapshot.Rate{RequestsPerSecond: 0.01, Burst: 2}}))
	e.withExtension(system("perext", snapshot.Backend{Services: services(held.URL)}, snapshot.Limits{PerExtension: snapshot.Rate{RequestsPerSecond: 0.01, Burst: 3}}))
	e.withExtension(system("single", snapshot.Backend{Services: services(held.URL)}, snapshot.Limits{MaxConcurrent: 1}))
	alice, carol := token("alice"), issuer().Token("carol", "carol@example.com", "argo-cd", []string{"org:team-a"}, time.Hour)

	codes := func(path string, tokens ...string) []int {
		var out []int
		for _, tok := range tokens {
			resp, body := e.do(req{path: path, token: tok})
			out = append(out, resp.StatusCode)
			if resp.StatusCode == 429 {
				if resp.Header.Get("Retry-After") == "" || problemOf(t, body).Error != "rate limited" {
					t.Errorf("429 without Retry-After or reason: %v %s", resp.Header, body)
				}
			}
		}
		return out
	}
	if got := fmt.Sprint(codes("/api/v1/extensions/peruser/x", alice, alice, alice, carol)); got != "[200 200 429 200]" {
		t.Errorf("per user: %s, want alice's third refused and carol served", got)
	}
	if got := fmt.Sprint(codes("/api/v1/extensions/perext/x", alice, carol, alice, carol)); got != "[200 200 200 429]" {
		t.Errorf("per extension: %s, want the fourth refused whoever sends it", got)
	}

	done := make(chan int)
	go func() {
		resp, _ := e.do(req{path: "/api/v1/extensions/single/hold", token: alice})
		done <- resp.StatusCode
	}()
	<-arrived
	if resp, body := e.do(req{path: "/api/v1/extensions/single/x", token: carol}); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second request in flight: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request held: %d", code)
	}
	if resp, _ := e.do(req{path: "/api/v1/extensions/single/x", token: carol}); resp.StatusCode != 200 {
		t.Errorf("after the first ended: %d", resp.StatusCode)
	}
	if got := counter(t, e.reg, "gatehouse_proxy_limited_requests_total", nil); got != 3 {
		t.Errorf("limited requests counted %v, want 3", got)
	}
}

// TestBackendTLS: the CA bundle, client certificate, server name and
// insecureSkipVerify of a service, from the snapshot's secrets.
func TestBackendTLS(t *testing.T) {
	ca, err := testkit.NewCA("backend-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testkit.NewCA("another-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Serving()
	if err != nil {
		t.Fatal(err)
	}
	clientPEM, clientKey, err := ca.Client("gatehouse-proxy")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	start := func(mutual bool) *httptest.Server {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			who := "anonymous"
			if len(r.TLS.PeerCertificates) > 0 {
				who = r.TLS.PeerCertificates[0].Subject.CommonName
			}
			fmt.Fprint(w, who)
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}}
		if mutual {
			srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	plain, mutual := start(false), start(true)
	e := newEnv(t, func(c *snapshot.Content) {
		c.Secrets["backend-tls/ca.crt"] = ca.PEM
		c.Secrets["other-tls/ca.crt"] = other.PEM
		c.Secrets["client-tls/tls.crt"] = clientPEM
		c.Secrets["client-tls/tls.key"] = clientKey
	})
	ref := func(p string) *snapshot.SecretRef { return &snapshot.SecretRef{Path: p} }
	localhost := strings.Replace(plain.URL, "127.0.0.1", "localhost", 1)
	tests := []struct {
		name   string
		svc    snapshot.Service
		status int
		who    string
	}{
		{"the snapshot's CA verifies the backend", snapshot.Service{URLs: []string{plain.URL}, TLS: &snapshot.TLS{CA: ref("backend-tls/ca.crt")}}, 200, "anonymous"},
		{"another CA does not", snapshot.Service{URLs: []string{plain.URL}, TLS: &snapshot.TLS{CA: ref("other-tls/ca.crt")}}, 502, ""},
		{"the system roots do not", snapshot.Service{URLs: []string{plain.URL}}, 502, ""},
		{"insecureSkipVerify skips verification", snapshot.Service{URLs: []string{plain.URL}, TLS: &snapshot.TLS{InsecureSkipVerify: true}}, 200, "anonymous"},
		{"a server name the certificate holds", snapshot.Service{URLs: []string{plain.URL}, TLS: &snapshot.TLS{CA: ref("backend-tls/ca.crt"), ServerName: "localhost"}}, 200, "anonymous"},
		{"a server name it does not", snapshot.Service{URLs: []string{localhost}, TLS: &snapshot.TLS{CA: ref("backend-tls/ca.crt"), ServerName: "metrics.example"}}, 502, ""},
		{"mutual TLS with the client certificate", snapshot.Service{URLs: []string{mutual.URL}, TLS: &snapshot.TLS{CA: ref("backend-tls/ca.crt"),
			ClientCert: ref("client-tls/tls.crt"), ClientKey: ref("client-tls/tls.key")}}, 200, "gatehouse-proxy"},
		{"mutual TLS without it", snapshot.Service{URLs: []string{mutual.URL}, TLS: &snapshot.TLS{CA: ref("backend-tls/ca.crt")}}, 502, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("tls%d", i)
			e.withExtension(system(name, snapshot.Backend{Services: []snapshot.Service{tt.svc}}, snapshot.Limits{}))
			resp, body := e.do(req{path: "/api/v1/extensions/" + name + "/", token: token("alice")})
			if resp.StatusCode != tt.status || tt.status == 200 && string(body) != tt.who {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tt.status, tt.who)
			}
		})
	}
}

// TestTLSRotation: new TLS material in a snapshot gets a new connection
// pool; a request in flight on the old one finishes.
func TestTLSRotation(t *testing.T) {
	oldCA, _ := testkit.NewCA("old")
	newCA, _ := testkit.NewCA("new")
	pair := func(ca *testkit.CA) tls.Certificate {
		c, k, err := ca.Serving()
		if err != nil {
			t.Fatal(err)
		}
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var current atomic.Pointer[tls.Certificate]
	oldPair, newPair := pair(oldCA), pair(newCA)
	current.Store(&oldPair)
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "ok")
	}))
	srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }}
	srv.StartTLS()
	defer srv.Close()
	e := newEnv(t, func(c *snapshot.Content) { c.Secrets["b/ca.crt"] = oldCA.PEM })
	// By name, so the client sends SNI and the server's GetCertificate
	// answers (httptest's own certificate answers a bare IP).
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	e.withExtension(system("rot", snapshot.Backend{Services: []snapshot.Service{{URLs: []string{byName}, TLS: &snapshot.TLS{CA: &snapshot.SecretRef{Path: "b/ca.crt"}}}}}, snapshot.Limits{}))
	inFlight := make(chan string, 1)
	go func() {
		resp, body := e.do(req{path: "/api/v1/extensions/rot/hold", token: token("alice")})
		inFlight <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}()
	select {
	case <-arrived:
	case got := <-inFlight:
		t.Fatalf("the request to hold got %s", got)
	}
	// The backend's certificate and the snapshot's CA rotate together.
	current.Store(&newPair)
	e.content.Secrets["b/ca.crt"] = newCA.PEM
	e.load(e.content)
	if resp, body := e.do(req{path: "/api/v1/extensions/rot/x", token: token("alice")}); resp.StatusCode != 200 {
		t.Fatalf("after rotation: %d %s", resp.StatusCode, body)
	}
	close(release)
	if got := <-inFlight; got != "200 ok" {
		t.Fatalf("the request in flight on the old pool got %s", got)
	}
}

// TestPassiveHealth: a URL that refuses connections is skipped; requests
// keep succeeding on the others, and the ejection is counted.
func TestPassiveHealth(t *testing.T) {
	e := newEnv(t, nil)
	e.withExtension(system("pair", snapshot.Backend{Services: services(deadURL(t), e.def.srv.URL)}, snapshot.Limits{}))
	for i := range 10 {
		if resp, body := e.do(req{path: "/api/v1/extensions/pair/x", token: token("alice")}); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if got := counter(t, e.reg, "gatehouse_proxy_backend_ejections_total", map[string]string{"extension": "pair"}); got != 1 {
		t.Errorf("ejections counted %v, want 1 (the URL stays ejected)", got)
	}
}
