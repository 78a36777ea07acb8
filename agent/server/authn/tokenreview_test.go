package authn

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeReviews answers TokenReviews from a table, counting calls.
type fakeReviews struct {
	mu       sync.Mutex
	calls    int
	statuses map[string]authenticationv1.TokenReviewStatus
	err      error
	lastSpec authenticationv1.TokenReviewSpec
}

func (f *fakeReviews) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.lastSpec = tr.Spec
	if f.err != nil {
		return nil, f.err
	}
	out := tr.DeepCopy()
	out.Status = f.statuses[tr.Spec.Token]
	return out, nil
}

func (f *fakeReviews) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// jwt makes an unsigned token with the exp claim (the fake API server is
// what "verifies" it).
func jwt(exp time.Time, tag string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(fmt.Appendf(nil, `{"exp":%d,"jti":%q}`, exp.Unix(), tag)) + ".sig"
}

func bound(ns, sa, podName, podUID string, audiences ...string) authenticationv1.TokenReviewStatus {
	st := authenticationv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     audiences,
		User: authenticationv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":" + sa,
			Extra:    map[string]authenticationv1.ExtraValue{},
		},
	}
	if podUID != "" {
		st.User.Extra[extraPodUID] = authenticationv1.ExtraValue{podUID}
		st.User.Extra[extraPodName] = authenticationv1.ExtraValue{podName}
	}
	return st
}

func TestTokenReviewJudgement(t *testing.T) {
	now := time.Now()
	exp := now.Add(time.Hour)
	tokens := map[string]string{}
	statuses := map[string]authenticationv1.TokenReviewStatus{}
	add := func(name string, st authenticationv1.TokenReviewStatus) {
		tokens[name] = jwt(exp, name)
		statuses[tokens[name]] = st
	}
	add("good", bound("gh", "gatehouse-agent", "proxy-1", "uid-1", "gatehouse"))
	add("intruder", bound("gh", "intruder", "evil", "uid-2", "gatehouse"))
	add("other namespace", bound("team-a", "gatehouse-agent", "p", "uid-3", "gatehouse"))
	add("wrong audience", bound("gh", "gatehouse-agent", "proxy-1", "uid-1", "something-else"))
	add("not bound to a pod", bound("gh", "gatehouse-agent", "", "", "gatehouse"))
	add("refused by the API server", authenticationv1.TokenReviewStatus{Error: "token has been invalidated"})
	// Authenticated alone decides: the rest of a refused review is not
	// evidence of anything.
	unauthenticated := bound("gh", "gatehouse-agent", "proxy-1", "uid-1", "gatehouse")
	unauthenticated.Authenticated = false
	add("not authenticated, though the rest fits", unauthenticated)
	add("not a service account", authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"gatehouse"}, User: authenticationv1.UserInfo{Username: "alice"}})
	fake := &fakeReviews{statuses: statuses}
	a, err := NewTokenReview(fake, "", []string{"gh/gatehouse-agent"}, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range tokens {
		t.Run(name, func(t *testing.T) {
			id, err := a.Authenticate(context.Background(), token)
			if name != "good" {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("%+v %v, want refused", id, err)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("error echoes the token")
				}
				return
			}
			want := Identity{Username: "system:serviceaccount:gh:gatehouse-agent", AgentID: "uid-1", PodName: "proxy-1", PodNamespace: "gh", PodUID: "uid-1", Expiry: time.Unix(exp.Unix(), 0)}
			if err != nil || *id != want {
				t.Fatalf("%+v %v, want %+v", id, err, want)
			}
		})
	}
	if fake.lastSpec.Audiences[0] != defaultAudience {
		t.Errorf("reviewed for audiences %v, want [%s]", fake.lastSpec.Audiences, defaultAudience)
	}
}

// Accepted tokens are cached by hash until min(exp, TTL); expired tokens
// are refused without asking; API errors are not refusals.
func TestTokenReviewCache(t *testing.T) {
	start := time.Now()
	now := start
	longLived := jwt(start.Add(time.Hour), "long")
	shortLived := jwt(start.Add(2*time.Minute), "short")
	opaque := "not-a-jwt"
	st := bound("gh", "agent", "p", "uid", "gatehouse")
	fake := &fakeReviews{statuses: map[string]authenticationv1.TokenReviewStatus{longLived: st, shortLived: st, opaque: st}}
	a, err := NewTokenReview(fake, "gatehouse", []string{"gh/agent"}, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	auth := func(token string) error { _, err := a.Authenticate(ctx, token); return err }

	steps := []struct {
		at        time.Duration
		token     string
		wantErr   bool
		wantCalls int
	}{
		{0, longLived, false, 1},
		{4 * time.Minute, longLived, false, 1},             // cached
		{5*time.Minute + time.Second, longLived, false, 2}, // TTL passed: reviewed again
		{5*time.Minute + time.Second, shortLived, true, 2}, // exp passed: refused unasked
		{5*time.Minute + time.Second, opaque, false, 3},
		{9 * time.Minute, opaque, false, 3},
		{10*time.Minute + 2*time.Second, opaque, false, 4},
		{61 * time.Minute, longLived, true, 4},
	}
	for i, s := range steps {
		now = start.Add(s.at)
		err := auth(s.token)
		if (err != nil) != s.wantErr || fake.count() != s.wantCalls {
			t.Fatalf("step %d (+%v): err %v, %d reviews; want error %v, %d reviews", i, s.at, err, fake.count(), s.wantErr, s.wantCalls)
		}
	}

	// A short-lived token is cached only until it expires.
	now = start
	shortLived2 := jwt(start.Add(2*time.Minute), "short-2")
	fake.statuses[shortLived2] = st
	calls := fake.count()
	if err := auth(shortLived2); err != nil {
		t.Fatal(err)
	}
	now = start.Add(2*time.Minute + time.Second)
	if err := auth(shortLived2); !errors.Is(err, ErrUnauthenticated) || fake.count() != calls+1 {
		t.Fatalf("after exp: %v, %d reviews; want refused after 1 review", err, fake.count()-calls)
	}

	// An unreachable API server is an error, not a refusal.
	fake.err = errors.New("connection refused")
	if err := auth(jwt(now.Add(time.Hour), "new")); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("API error: %v, want a non-refusal error", err)
	}
}

func TestNewTokenReviewValidates(t *testing.T) {
	fake := &fakeReviews{}
	for _, allowed := range [][]string{nil, {"no-slash"}, {"/name"}, {"ns/"}, {"a/b/c"}} {
		if _, err := NewTokenReview(fake, "", allowed); err == nil {
			t.Errorf("allowed %v accepted", allowed)
		}
	}
	if _, err := NewTokenReview(nil, "", []string{"a/b"}); err == nil {
		t.Error("nil client accepted")
	}
}
