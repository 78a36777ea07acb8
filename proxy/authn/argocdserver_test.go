package authn

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// fakeArgoCD answers /api/v1/session/userinfo as Argo CD does for its own
// tokens: 200 with loggedIn and the account (or "proj:<project>:<role>") for
// a token it verifies with testSecret and has not revoked, 200 with
// loggedIn false otherwise. test/casbindiff holds the mode to Argo CD's
// own code; this fake lets the unit tests count and stall the calls.
type fakeArgoCD struct {
	srv     *httptest.Server
	calls   atomic.Int64
	mu      sync.Mutex
	revoked map[string]bool // by jti
	// answer, when set, replaces the answer (status, body).
	answer func() (int, string)
	// hold, when set, is waited on before answering.
	hold chan struct{}
	// arrived, when set, is told of each request as it arrives.
	arrived chan struct{}
}

func newFakeArgoCD(t *testing.T) *fakeArgoCD {
	f := &fakeArgoCD{revoked: map[string]bool{}}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeArgoCD) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if f.arrived != nil {
		select {
		case f.arrived <- struct{}{}:
		default:
		}
	}
	if f.hold != nil {
		<-f.hold
	}
	if r.URL.Path != UserInfoPath || len(r.Cookies()) > 0 {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	if f.answer != nil {
		code, body := f.answer()
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
		return
	}
	info := userInfo{}
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var c jwt.MapClaims
	_, err := jwt.NewParser(jwt.WithoutClaimsValidation(), jwt.WithValidMethods([]string{"HS256"})).
		ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return testSecret, nil })
	jti, _ := c["jti"].(string)
	f.mu.Lock()
	revoked := f.revoked[jti]
	f.mu.Unlock()
	if err == nil && !revoked {
		sub, _ := c["sub"].(string)
		if !strings.HasPrefix(sub, "proj:") {
			sub, _, _ = strings.Cut(sub, ":")
		}
		info = userInfo{LoggedIn: true, Username: sub, Iss: "argocd"}
	}
	_ = json.NewEncoder(w).Encode(info)
}

func (f *fakeArgoCD) revoke(jti string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked[jti] = true
}

func (f *fakeArgoCD) config() *ArgoCDServer {
	return &ArgoCDServer{URL: f.srv.URL, HTTPClient: f.srv.Client()}
}

// The same token gives the same Identity whether the proxy holds Argo CD's
// key or asks Argo CD: backends and policies cannot tell the modes apart.
func TestArgoCDServerModeGivesTheKeyModesIdentity(t *testing.T) {
	f := newFakeArgoCD(t)
	clock := newClock()
	withKey := newAuth(t, clock, Config{LocalSecretKey: testSecret, GroupsClaims: []string{"groups", "email"}})
	asking := newAuth(t, clock, Config{ArgoCD: f.config(), GroupsClaims: []string{"groups", "email"}})
	for _, sub := range []string{"alice:login", "ci:apiKey", "legacy-ci", "proj:team-a:deployer", "ops:login:extra"} {
		t.Run(sub, func(t *testing.T) {
			tok := localToken(localClaims(sub))
			want, err := withKey.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("key mode: %v", err)
			}
			got, err := asking.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Argo CD API server mode: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("identities differ:\nasking Argo CD: %+v\nwith the key:   %+v", got, want)
			}
		})
	}
	// Without the key, no token is ever verified here: a forged one is
	// Argo CD's to refuse.
	forged := mint(map[string]any{"alg": "HS256"}, localClaims("admin:login"), hs256([]byte("guessed")))
	_, err := asking.Verify(context.Background(), forged)
	wantErr(t, err, ErrRevoked, "sign in to Argo CD again")
}

// A token Argo CD revokes on logout keeps working here for at most the
// cache TTL; Argo CD's no is never cached.
func TestArgoCDServerModeHonoursLogoutWithinTheTTL(t *testing.T) {
	f := newFakeArgoCD(t)
	clock := newClock()
	a := newAuth(t, clock, Config{ArgoCD: f.config()})
	ctx := context.Background()
	claims := localClaims("alice:login")
	tok := localToken(claims)

	if _, err := a.Verify(ctx, tok); err != nil {
		t.Fatalf("before logout: %v", err)
	}
	f.revoke(claims["jti"].(string))
	clock.Advance(DefaultArgoCDCacheTTL - time.Second)
	if _, err := a.Verify(ctx, tok); err != nil {
		t.Fatalf("within the TTL the cached yes holds: %v", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("Argo CD asked %d times within the TTL, want 1", n)
	}
	clock.Advance(time.Second)
	_, err := a.Verify(ctx, tok)
	wantErr(t, err, ErrRevoked, "signed out")
	_, err = a.Verify(ctx, tok)
	wantErr(t, err, ErrRevoked)
	if n := f.calls.Load(); n != 3 {
		t.Errorf("Argo CD asked %d times, want 3: a no must not be cached", n)
	}
}

// What the proxy can refuse alone it refuses without asking: a stream of
// junk tokens costs Argo CD nothing.
func TestArgoCDServerModeRefusesWithoutAsking(t *testing.T) {
	f := newFakeArgoCD(t)
	accounts := &Accounts{Users: map[string]Account{"bob": {Enabled: false, Capabilities: []string{"login"}}}}
	a := newAuth(t, newClock(), Config{ArgoCD: f.config(), LocalChecker: accounts})
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"expired", localToken(with(localClaims("alice:login"), "exp", t0.Add(-time.Second).Unix())), ErrExpired},
		{"HS384", mint(map[string]any{"alg": "HS384"}, localClaims("alice:login"), noSig), errAlgorithm},
		{"none", mint(map[string]any{"alg": "none"}, localClaims("alice:login"), noSig), errAlgorithm},
		{"unknown algorithm", mint(map[string]any{"alg": "XS1"}, localClaims("alice:login"), noSig), errAlgorithm},
		{"no iat", localToken(with(localClaims("alice:login"), "iat", nil)), errMalformed},
		{"no subject", localToken(with(localClaims(""), "sub", nil)), errMalformed},
		{"disabled in the snapshot", localToken(localClaims("bob:login")), ErrRevoked},
		{"not a JWT", "abc.def", errMalformed},
		{"another issuer", localToken(with(localClaims("alice:login"), "iss", "https://evil")), errWrongIssuer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Verify(context.Background(), tt.token)
			wantErr(t, err, tt.want)
		})
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("Argo CD asked %d times, want 0", n)
	}
}

// Argo CD unreachable or answering nonsense: 503, never a yes, and no key to
// fall back to.
func TestArgoCDServerModeFailsClosed(t *testing.T) {
	tok := localToken(localClaims("alice:login"))
	tests := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"server error", http.StatusInternalServerError, `{"loggedIn":true,"username":"alice","iss":"argocd"}`, ErrUnavailable},
		{"401", http.StatusUnauthorized, `{"loggedIn":true,"username":"alice","iss":"argocd"}`, ErrUnavailable},
		{"not JSON", http.StatusOK, `<html>login</html>`, ErrUnavailable},
		{"null", http.StatusOK, `null`, ErrUnavailable},
		{"too large", http.StatusOK, `{"groups":["` + strings.Repeat("g", maxUserInfoBytes) + `"]}`, ErrUnavailable},
		{"another user", http.StatusOK, `{"loggedIn":true,"username":"admin","iss":"argocd"}`, ErrUnavailable},
		{"another issuer", http.StatusOK, `{"loggedIn":true,"username":"alice","iss":"sso"}`, ErrUnavailable},
		{"not logged in", http.StatusOK, `{}`, ErrRevoked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeArgoCD(t)
			f.answer = func() (int, string) { return tt.status, tt.body }
			a := newAuth(t, newClock(), Config{ArgoCD: f.config()})
			_, err := a.Verify(context.Background(), tok)
			wantErr(t, err, tt.want)
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		f := newFakeArgoCD(t)
		cfg := f.config()
		f.srv.Close()
		a := newAuth(t, newClock(), Config{ArgoCD: cfg})
		_, err := a.Verify(context.Background(), tok)
		wantErr(t, err, ErrUnavailable, "cannot be reached")
		if strings.Contains(err.Error(), f.srv.URL) {
			t.Errorf("the holder's message names the internal address: %v", err)
		}
	})
	t.Run("redirected", func(t *testing.T) {
		elsewhere := newFakeArgoCD(t)
		f := newFakeArgoCD(t)
		f.answer = func() (int, string) { return http.StatusFound, "" }
		f.srv.Config.Handler = http.RedirectHandler(elsewhere.srv.URL+UserInfoPath, http.StatusFound)
		cfg := f.config()
		cfg.HTTPClient = elsewhere.srv.Client() // trusts both test servers' CA
		a := newAuth(t, newClock(), Config{ArgoCD: cfg})
		_, err := a.Verify(context.Background(), tok)
		wantErr(t, err, ErrUnavailable)
		if n := elsewhere.calls.Load(); n != 0 {
			t.Errorf("the redirect was followed with the token")
		}
	})
}

// A burst of one token makes one call.
func TestArgoCDServerModeSharesOneQuestionPerToken(t *testing.T) {
	const n = 8
	f := newFakeArgoCD(t)
	f.hold = make(chan struct{})
	a := newAuth(t, newClock(), Config{ArgoCD: f.config()}, withCacheSize(0))
	var joined sync.WaitGroup
	joined.Add(n)
	a.state.Load().argocd.joined = joined.Done
	tok := localToken(localClaims("alice:login"))
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := a.Verify(context.Background(), tok)
			errs <- err
		}()
	}
	joined.Wait()
	close(f.hold)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if c := f.calls.Load(); c != 1 {
		t.Errorf("Argo CD asked %d times for one token, want 1", c)
	}
}

// The questions in flight are bounded: while the only slot is taken, no
// second question reaches Argo CD, and its caller gets 503 when it stops
// waiting.
func TestArgoCDServerModeBoundsQuestionsInFlight(t *testing.T) {
	f := newFakeArgoCD(t)
	f.hold = make(chan struct{})
	f.arrived = make(chan struct{}, 4)
	cfg := f.config()
	cfg.MaxInFlight = 1
	a := newAuth(t, newClock(), Config{ArgoCD: cfg})
	first := make(chan error, 1)
	go func() {
		_, err := a.Verify(context.Background(), localToken(localClaims("alice:login")))
		first <- err
	}()
	<-f.arrived
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Verify(ctx, localToken(localClaims("bob:login")))
	wantErr(t, err, ErrUnavailable)
	if c := f.calls.Load(); c != 1 {
		t.Errorf("%d questions reached Argo CD while it had one slot, want 1", c)
	}
	close(f.hold)
	if err := <-first; err != nil {
		t.Errorf("the question in flight: %v", err)
	}
}

func TestArgoCDServerConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"https", Config{ArgoCD: &ArgoCDServer{URL: "https://argocd-server.argocd.svc"}}, ""},
		{"with a base path", Config{ArgoCD: &ArgoCDServer{URL: "https://argocd.example.com/argo-cd/"}}, ""},
		{"key and server both", Config{LocalSecretKey: testSecret, ArgoCD: &ArgoCDServer{URL: "https://argocd-server"}}, "choose one"},
		{"http", Config{ArgoCD: &ArgoCDServer{URL: "http://argocd-server"}}, "must be https"},
		{"http allowed for dev", Config{ArgoCD: &ArgoCDServer{URL: "http://127.0.0.1:8080", AllowInsecureHTTP: true}}, ""},
		{"no URL", Config{ArgoCD: &ArgoCDServer{}}, "no URL"},
		{"no host", Config{ArgoCD: &ArgoCDServer{URL: "https:///x"}}, "want https://host"},
		{"credentials in the URL", Config{ArgoCD: &ArgoCDServer{URL: "https://u:p@argocd-server"}}, "want https://host"},
		{"TTL too long", Config{ArgoCD: &ArgoCDServer{URL: "https://argocd-server", CacheTTL: time.Minute}}, "between 0 and 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// The cache never outlives the token, and SSO tokens keep their own TTL.
func TestArgoCDServerModeCacheStopsAtExpiry(t *testing.T) {
	f := newFakeArgoCD(t)
	clock := newClock()
	a := newAuth(t, clock, Config{ArgoCD: f.config()})
	tok := localToken(with(localClaims("alice:login"), "exp", t0.Add(5*time.Second).Unix()))
	if _, err := a.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	_, err := a.Verify(context.Background(), tok)
	wantErr(t, err, ErrExpired)
}
