package authn

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

const (
	// defaultAudience is the audience agent tokens must be minted for.
	defaultAudience = "gatehouse"
	// defaultCacheTTL is the longest a TokenReview result is reused.
	defaultCacheTTL = 5 * time.Minute
	// maxCacheEntries bounds the cache; past it, expired entries are
	// dropped, and if none are, the whole cache.
	maxCacheEntries = 10000

	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
	saPrefix     = "system:serviceaccount:"
)

// TokenReview authenticates bound ServiceAccount tokens with the API
// server's TokenReview API. A token is accepted when the API server says it
// is valid for the audience, it belongs to one of the allowed
// ServiceAccounts, and it is bound to a Pod, whose UID becomes the agent id.
//
// Accepted tokens are cached by their SHA-256 until the token expires or the
// cache TTL passes, whichever is first; refusals are not cached. So a token
// stays accepted for up to the TTL after its Pod is deleted.
type TokenReview struct {
	reviews  authenticationv1client.TokenReviewInterface
	audience string
	allowed  map[string]bool // "namespace/name"
	o        options

	mu    sync.Mutex
	cache map[[32]byte]cached
}

type cached struct {
	id    *Identity
	until time.Time
}

// NewTokenReview returns a TokenReview authenticator. audience "" means
// defaultAudience; allowedServiceAccounts are "namespace/name".
func NewTokenReview(reviews authenticationv1client.TokenReviewInterface, audience string, allowedServiceAccounts []string, opts ...Option) (*TokenReview, error) {
	if reviews == nil {
		return nil, fmt.Errorf("token review authenticator: no TokenReview client")
	}
	if audience == "" {
		audience = defaultAudience
	}
	if len(allowedServiceAccounts) == 0 {
		return nil, fmt.Errorf("token review authenticator: no allowed ServiceAccounts")
	}
	allowed := map[string]bool{}
	for _, sa := range allowedServiceAccounts {
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("token review authenticator: allowed ServiceAccount %q: want namespace/name", sa)
		}
		allowed[sa] = true
	}
	a := &TokenReview{
		reviews:  reviews,
		audience: audience,
		allowed:  allowed,
		o:        buildOptions(opts),
		cache:    map[[32]byte]cached{},
	}
	if a.o.cacheTTL <= 0 {
		a.o.cacheTTL = defaultCacheTTL
	}
	return a, nil
}

// Authenticate implements Authenticator.
func (a *TokenReview) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, refused("empty token")
	}
	now := a.o.now()
	key := sha256.Sum256([]byte(token))
	if id, ok := a.lookup(key, now); ok {
		return id, nil
	}
	// The unverified exp claim is only ever used to refuse or to shorten
	// caching, never to accept: the API server verifies the token.
	exp, hasExp := unverifiedExpiry(token)
	if hasExp && !exp.After(now) {
		return nil, refused("token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	res, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{a.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("review token with the API server: %w", err)
	}
	id, err := a.judge(res.Status)
	if err != nil {
		return nil, err
	}
	until := now.Add(a.o.cacheTTL)
	if hasExp {
		id.Expiry = exp
		if exp.Before(until) {
			until = exp
		}
	}
	a.store(key, cached{id: id, until: until}, now)
	return copyIdentity(id), nil
}

// judge turns a TokenReview's status into an Identity or a refusal.
func (a *TokenReview) judge(st authenticationv1.TokenReviewStatus) (*Identity, error) {
	if !st.Authenticated {
		if st.Error != "" {
			a.o.logger.Info("agent token refused by the API server", "reason", st.Error)
		}
		return nil, refused("token not accepted by the API server for audience %q", a.audience)
	}
	audienceOK := false
	for _, aud := range st.Audiences {
		audienceOK = audienceOK || aud == a.audience
	}
	if !audienceOK {
		return nil, refused("token is not valid for audience %q", a.audience)
	}
	user := st.User.Username
	ns, name, ok := strings.Cut(strings.TrimPrefix(user, saPrefix), ":")
	if !strings.HasPrefix(user, saPrefix) || !ok || ns == "" || name == "" {
		return nil, refused("user %q is not a ServiceAccount", user)
	}
	if !a.allowed[ns+"/"+name] {
		return nil, refused("ServiceAccount %s/%s may not connect as an agent", ns, name)
	}
	podUID, podName := first(st.User.Extra[extraPodUID]), first(st.User.Extra[extraPodName])
	if podUID == "" {
		return nil, refused("token of ServiceAccount %s/%s is not bound to a Pod", ns, name)
	}
	return &Identity{
		Username:     user,
		AgentID:      podUID,
		PodName:      podName,
		PodNamespace: ns, // a Pod runs as a ServiceAccount of its own namespace
		PodUID:       podUID,
	}, nil
}

func (a *TokenReview) lookup(key [32]byte, now time.Time) (*Identity, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.cache[key]
	if !ok {
		return nil, false
	}
	if !now.Before(c.until) {
		delete(a.cache, key)
		return nil, false
	}
	return copyIdentity(c.id), true
}

func (a *TokenReview) store(key [32]byte, c cached, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxCacheEntries {
		for k, v := range a.cache {
			if !now.Before(v.until) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxCacheEntries {
			clear(a.cache)
		}
	}
	a.cache[key] = c
}

func copyIdentity(id *Identity) *Identity {
	c := *id
	return &c
}

func first(v authenticationv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// unverifiedExpiry reads the exp claim of a JWT without verifying it.
func unverifiedExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Float64()
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0), true
}
