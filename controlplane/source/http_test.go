package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// bundleServer serves a bundle at /bundle.tar.gz to a request that
// passes check, with an ETag, and records what it saw.
type bundleServer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	data      []byte
	etag      bool
	check     func(*http.Request) bool
	seenAuth  []string
	gets      atomic.Int64
	bodyBytes atomic.Int64
	failFirst atomic.Int64 // answer 503 this many times first
}

func newBundleServer(t *testing.T, data []byte, useTLS bool, check func(*http.Request) bool) *bundleServer {
	t.Helper()
	b := &bundleServer{data: data, etag: true, check: check}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		b.srv.StartTLS()
	} else {
		b.srv.Start()
	}
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bundleServer) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.seenAuth = append(b.seenAuth, r.Header.Get("Authorization"))
	data, etag := b.data, b.etag
	b.mu.Unlock()
	if b.failFirst.Add(-1) >= 0 {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	if b.check != nil && !b.check(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="bundles"`)
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/bundle.tar.gz" {
		http.NotFound(w, r)
		return
	}
	b.gets.Add(1)
	sum := sha256.Sum256(data)
	tag := `"` + hex.EncodeToString(sum[:8]) + `"`
	if etag {
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "application/gzip")
	n, _ := w.Write(data)
	b.bodyBytes.Add(int64(n))
}

func (b *bundleServer) set(data []byte, etag bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data, b.etag = data, etag
}

func (b *bundleServer) auths() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seenAuth...)
}

func (b *bundleServer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
}

func requireBasic(r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	return ok && u == testUser && p == testPassword
}

func requireBearer(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer b3ar3r" }

func credsFrom(t *testing.T, typ string, data map[string][]byte, scheme string) *Credentials {
	t.Helper()
	c, err := secretCredentials("web", typ, data, scheme, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHTTPFetch(t *testing.T) {
	bundle := testBundle(t, "v1")
	sum := sha256.Sum256(bundle)
	opaque := gatehousev1.SecretTypeOpaque
	for _, tc := range []struct {
		name     string
		tls      bool
		check    func(*http.Request) bool
		secret   map[string][]byte // Opaque; nil: anonymous
		typ      string
		withCA   bool
		insecure bool
		path     string
		pin      string
		max      int64
		reason   string
		says     string
	}{
		{name: "anonymous"},
		{name: "Basic from username and password", check: requireBasic, secret: map[string][]byte{keyUsername: []byte(testUser), keyPassword: []byte(testPassword)}},
		{name: "Basic from a basic-auth Secret", check: requireBasic, typ: gatehousev1.SecretTypeBasicAuth,
			secret: map[string][]byte{keyUsername: []byte(testUser), keyPassword: []byte(testPassword)}},
		{name: "a bearer header from authorization", check: requireBearer, secret: map[string][]byte{keyAuthorization: []byte("Bearer b3ar3r\n")}},
		{name: "authorization beats username and password", check: requireBearer,
			secret: map[string][]byte{keyAuthorization: []byte("Bearer b3ar3r"), keyUsername: []byte(testUser), keyPassword: []byte(testPassword)}},
		{name: "wrong password", check: requireBasic, secret: map[string][]byte{keyUsername: []byte(testUser), keyPassword: []byte("wrong")},
			reason: gatehousev1.ReasonAuthenticationFailed, says: "401 Unauthorized: check the credentials"},
		{name: "no Secret for a server that wants one", check: requireBearer, reason: gatehousev1.ReasonAuthenticationFailed, says: "name a Secret"},
		{name: "not found", path: "/nope.tar.gz", reason: gatehousev1.ReasonNotFound, says: "404"},
		{name: "TLS with ca.crt from the Secret", tls: true, withCA: true, check: requireBearer, secret: map[string][]byte{keyAuthorization: []byte("Bearer b3ar3r")}},
		{name: "TLS with insecureSkipTLSVerify", tls: true, insecure: true},
		{name: "TLS from an unknown authority", tls: true, reason: gatehousev1.ReasonFetchFailed, says: "put the CA in ca.crt"},
		{name: "sha256 pin", pin: hex.EncodeToString(sum[:])},
		{name: "sha256 mismatch", pin: strings.Repeat("0", 64), reason: gatehousev1.ReasonChecksumMismatch, says: "is " + hex.EncodeToString(sum[:])},
		{name: "larger than the limit", max: 100, reason: gatehousev1.ReasonTooLarge, says: "more than the 100 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBundleServer(t, bundle, tc.tls, tc.check)
			path := "/bundle.tar.gz"
			if tc.path != "" {
				path = tc.path
			}
			req := Request{URL: s.srv.URL + path, SHA256: tc.pin, InsecureSkipTLSVerify: tc.insecure, MaxBytes: tc.max}
			if tc.secret != nil || tc.withCA {
				data := map[string][]byte{}
				for k, v := range tc.secret {
					data[k] = v
				}
				if tc.withCA {
					data[keyCA] = s.caPEM()
				}
				typ := tc.typ
				if typ == "" {
					typ = opaque
				}
				scheme := gatehousev1.SchemeHTTP
				if tc.tls {
					scheme = gatehousev1.SchemeHTTPS
				}
				req.Credentials = credsFrom(t, typ, data, scheme)
			}
			res, err := newTestFetcher().Fetch(context.Background(), req)
			if tc.reason != "" {
				if Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v (%s), want %s saying %q", err, Reason(err), tc.reason, tc.says)
				}
				for _, secret := range []string{testPassword, "wrong", "b3ar3r"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows a credential: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Artifact.Data) != string(bundle) || res.Artifact.Digest != "sha256:"+hex.EncodeToString(sum[:]) || res.Artifact.ETag == "" {
				t.Fatalf("got %+v", res.Artifact)
			}
		})
	}
}

func TestHTTPUnchangedSendsNoBody(t *testing.T) {
	s := newBundleServer(t, testBundle(t, "v1"), false, nil)
	f := newTestFetcher()
	req := Request{URL: s.srv.URL + "/bundle.tar.gz"}
	first, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := s.bodyBytes.Load()
	req.Previous = first.Artifact
	again, err := f.Fetch(context.Background(), req)
	if err != nil || !again.Unchanged || s.bodyBytes.Load() != sent {
		t.Fatalf("got %+v, %v; %d body bytes sent for an unchanged ETag", again, err, s.bodyBytes.Load()-sent)
	}
	// A server without ETags: the same bytes are still "unchanged".
	s.set(testBundle(t, "v1"), false)
	if again, err = f.Fetch(context.Background(), req); err != nil || !again.Unchanged {
		t.Fatalf("same bytes without an ETag: got %+v, %v", again, err)
	}
	s.set(testBundle(t, "v2"), true)
	if next, err := f.Fetch(context.Background(), req); err != nil || next.Unchanged || next.Artifact.Digest == first.Artifact.Digest {
		t.Fatalf("a new version: got %+v, %v", next, err)
	}
}

func TestHTTPRedirects(t *testing.T) {
	bundle := testBundle(t, "v1")
	// Elsewhere serves anonymously: a CDN the bundle server hands off to.
	elsewhere := newBundleServer(t, bundle, false, nil)
	home := newBundleServer(t, bundle, false, nil)
	port := strings.TrimPrefix(elsewhere.srv.URL, "http://127.0.0.1:")
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+"/bundle.tar.gz", http.StatusFound)
	})
	mux.HandleFunc("/home", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, home.srv.URL+"/bundle.tar.gz", http.StatusFound)
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	creds := &Credentials{Authorization: "Bearer b3ar3r"}

	if _, err := newTestFetcher().Fetch(context.Background(), Request{URL: front.URL + "/away", Credentials: creds}); err != nil {
		t.Fatal(err)
	}
	if got := elsewhere.auths(); len(got) != 1 || got[0] != "" {
		t.Errorf("the other host received Authorization %q; want none", got)
	}
	// The same origin behind the redirect (same host and port) would; a
	// different port is another origin and does not.
	if _, err := newTestFetcher().Fetch(context.Background(), Request{URL: front.URL + "/home", Credentials: creds}); err != nil {
		t.Fatal(err)
	}
	if got := home.auths(); len(got) != 1 || got[0] != "" {
		t.Errorf("another port of the same host received Authorization %q; want none", got)
	}

	tlsFront := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, home.srv.URL+"/bundle.tar.gz", http.StatusFound)
	}))
	t.Cleanup(tlsFront.Close)
	_, err := newTestFetcher().Fetch(context.Background(), Request{URL: tlsFront.URL + "/x", InsecureSkipTLSVerify: true})
	if err == nil || !strings.Contains(err.Error(), "refused a redirect from https:// to http://") {
		t.Fatalf("https → http redirect: got %v", err)
	}
}

func TestHTTPRetriesTransientFailures(t *testing.T) {
	s := newBundleServer(t, testBundle(t, "v1"), false, nil)
	s.failFirst.Store(2)
	f := NewFetcher(Options{Attempts: 3, Backoff: time.Millisecond})
	if _, err := f.Fetch(context.Background(), Request{URL: s.srv.URL + "/bundle.tar.gz"}); err != nil {
		t.Fatalf("two 503s then the bundle, in three attempts: %v", err)
	}
	s.failFirst.Store(5)
	_, err := f.Fetch(context.Background(), Request{URL: s.srv.URL + "/bundle.tar.gz"})
	if Reason(err) != gatehousev1.ReasonFetchFailed || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503 every time: got %v", err)
	}
}

func TestUnsupportedScheme(t *testing.T) {
	for _, u := range []string{"ftp://x/b.tar.gz", "registry.example/p:v1", "s3://bucket/key"} {
		_, err := newTestFetcher().Fetch(context.Background(), Request{URL: u})
		if Reason(err) != gatehousev1.ReasonUnsupportedScheme {
			t.Errorf("%s: got %v (%s), want UnsupportedScheme", u, err, Reason(err))
		}
	}
}
