package server

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
)

// kubeAssets is the directory with kube-apiserver and etcd: $KUBEBUILDER_ASSETS,
// or what test/tools/install.sh prints (it builds them once, then caches).
func kubeAssets(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	out, err := exec.Command("../../test/tools/install.sh").Output()
	if err != nil {
		t.Fatalf("build kube-apiserver and etcd with test/tools/install.sh (or set KUBEBUILDER_ASSETS): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// countingReviews counts TokenReviews sent to the real API server.
type countingReviews struct {
	authenticationv1client.TokenReviewInterface
	n atomic.Int32
}

func (c *countingReviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, o metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	c.n.Add(1)
	return c.TokenReviewInterface.Create(ctx, tr, o)
}

// TestTokenReviewWithAPIServer runs agents with real bound ServiceAccount
// tokens against a real kube-apiserver (envtest; no kubelet: the Pods are
// API objects only).
func TestTokenReviewWithAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: kubeAssets(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const ns = "gatehouse-system"
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	for _, sa := range []string{"gatehouse-agent", "intruder"} {
		must(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}))
	}
	pod := func(name, sa string) *corev1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				ServiceAccountName: sa,
				Containers:         []corev1.Container{{Name: "agent", Image: "gatehouse:test"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := func(sa string, p *corev1.Pod, audience string) string {
		t.Helper()
		exp := int64(600)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:         []string{audience},
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	proxy1 := pod("proxy-1", "gatehouse-agent")
	proxy2 := pod("proxy-2", "gatehouse-agent")
	evil := pod("evil", "intruder")
	agentToken := token("gatehouse-agent", proxy1, "gatehouse")
	intruderToken := token("intruder", evil, "gatehouse")
	otherAudience := token("gatehouse-agent", proxy1, "something-else")
	deletedPodToken := token("gatehouse-agent", proxy2, "gatehouse")

	reviews := &countingReviews{TokenReviewInterface: cs.AuthenticationV1().TokenReviews()}
	auth, err := authn.NewTokenReview(reviews, "gatehouse", []string{ns + "/gatehouse-agent"}, authn.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options) { o.Authenticator = auth })
	v1 := testSnapshot(t, map[string]string{"config/a": "1"})
	mustPublish(t, h.srv, v1)

	t.Run("allowed ServiceAccount connects as its Pod's UID", func(t *testing.T) {
		a, _ := h.connect(agentToken, &agentv1.AgentConnectRequest{Pod: &agentv1.PodRef{Name: "proxy-1", Namespace: ns, Uid: string(proxy1.UID)}})
		if a.nextConfig().GetConfigAvailable().GetVersion() != v1.Version() {
			t.Fatal("no announcement")
		}
		got, ok := h.agent(string(proxy1.UID))
		want := PodRef{Name: "proxy-1", Namespace: ns, UID: string(proxy1.UID)}
		if !ok || got.Pod != want || !got.PodVerified || got.Username != "system:serviceaccount:"+ns+":gatehouse-agent" {
			t.Fatalf("registry %+v (found %v), want agent %s in pod %+v", got, ok, proxy1.UID, want)
		}
		// Downloads authenticate the same way (and hit the cache).
		before := reviews.n.Load()
		if _, _, err := download(t, h.client(dialOpts{}), agentToken, v1.Version(), hashOf("1")); err != nil {
			t.Fatal(err)
		}
		if reviews.n.Load() != before {
			t.Error("a cached token was reviewed again")
		}
	})
	t.Run("the same token claiming another Pod is refused", func(t *testing.T) {
		a := openAgent(t, h.client(dialOpts{}), agentToken)
		a.sendConnect(&agentv1.AgentConnectRequest{Pod: &agentv1.PodRef{Uid: string(proxy2.UID)}})
		a.read()
		if resp := a.next().GetConnectResponse(); resp.GetAccepted() {
			t.Fatal("accepted")
		}
		if code, _ := a.ended(); code.String() != "PermissionDenied" {
			t.Fatalf("ended with %v, want PermissionDenied", code)
		}
	})

	refused := func(t *testing.T, token string) {
		t.Helper()
		a := openAgent(t, h.client(dialOpts{}), token)
		a.sendConnect(nil)
		a.read()
		if code, msg := a.ended(); code.String() != "Unauthenticated" || strings.Contains(msg, token) {
			t.Fatalf("ended with %v %q, want Unauthenticated not echoing the token", code, msg)
		}
	}
	t.Run("another ServiceAccount is refused", func(t *testing.T) { refused(t, intruderToken) })
	t.Run("a token for another audience is refused", func(t *testing.T) { refused(t, otherAudience) })
	t.Run("a token whose Pod was deleted is refused", func(t *testing.T) {
		zero := int64(0)
		if err := cs.CoreV1().Pods(ns).Delete(ctx, proxy2.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		// Wait until the API server itself no longer accepts the token, so
		// the server cannot have cached an answer from before the delete.
		// The API server caches a successful token authentication for 10 s,
		// so this can take longer than eventually's usual wait.
		deadline := time.Now().Add(30 * time.Second)
		for {
			tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: deletedPodToken, Audiences: []string{"gatehouse"}}}, metav1.CreateOptions{})
			if err == nil && !tr.Status.Authenticated {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the API server still accepts the deleted Pod's token after 30s (last error %v)", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		refused(t, deletedPodToken)
	})
	for _, a := range h.srv.Agents() {
		if a.ID != string(proxy1.UID) {
			t.Errorf("registry holds %s; only %s was ever accepted", a.ID, proxy1.UID)
		}
	}

	// An API server will not mint tokens shorter than 10 minutes, so token
	// expiry is exercised with a clock moved forward: the real token is
	// re-reviewed after the cache TTL, and refused once past its exp claim.
	t.Run("cached until min(exp, 5m); refused after exp", func(t *testing.T) {
		var skew atomic.Int64
		counting := &countingReviews{TokenReviewInterface: cs.AuthenticationV1().TokenReviews()}
		clocked, err := authn.NewTokenReview(counting, "gatehouse", []string{ns + "/gatehouse-agent"},
			authn.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
		if err != nil {
			t.Fatal(err)
		}
		fresh := token("gatehouse-agent", proxy1, "gatehouse")
		for _, step := range []struct {
			skew    time.Duration
			reviews int32
			ok      bool
		}{
			{0, 1, true},
			{4 * time.Minute, 1, true},
			{5*time.Minute + time.Second, 2, true},
			{11 * time.Minute, 2, false},
		} {
			skew.Store(int64(step.skew))
			id, err := clocked.Authenticate(ctx, fresh)
			if step.ok != (err == nil) || counting.n.Load() != step.reviews {
				t.Fatalf("at +%v: %v, %d reviews; want ok=%v after %d reviews", step.skew, err, counting.n.Load(), step.ok, step.reviews)
			}
			if err == nil && (id.PodUID != string(proxy1.UID) || id.Expiry.Before(time.Now().Add(9*time.Minute))) {
				t.Fatalf("identity %+v", id)
			}
			if err != nil && !errors.Is(err, authn.ErrUnauthenticated) {
				t.Fatalf("expired token: %v, want a refusal", err)
			}
		}
	})
}
