package proxy

import (
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// hostilePolicy allows every request, but for bob builds a string of
// 512 MiB in ten expressions: each of his decisions would take the proxy's
// memory, with every other user's requests.
const hostilePolicy = `package gatehouse.extensions

double(s) := concat("", [s, s])

big := double(double(double(double(double(double(double(double(double(sprintf("%01000000d", [0]))))))))))

decision := {"allow": true, "reason": "ok"} if input.user.username != "bob"

decision := {"allow": true, "reason": sprintf("%d", [count(big)])} if input.user.username == "bob"
`

// TestHostilePolicyUnderLoad: while alice's clients send requests without
// pause, bob's requests make the policy outgrow the proxy's memory limit
// (--memory-limit, 64 MiB here); the engine stops those decisions and
// denies them, the proxy stays up, and every one of alice's requests is
// answered by the backend. Without the memory bound bob's decisions build
// their 512 MiB and are allowed.
func TestHostilePolicyUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MiB")
	}
	prev := debug.SetMemoryLimit(64 << 20)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	// A bound of a minute: the time bound (and its step count) must not
	// be what stops bob, so the test shows the memory bound alone.
	e := newEnv(t, func(c *snapshot.Content) {
		c.Policy = map[string][]byte{"extensions/policy.rego": []byte(hostilePolicy)}
	}, func(o *Options) { o.Engine = append(o.Engine, policies.WithEvalTimeout(time.Minute)) })
	send := func(client *http.Client, account string) (int, string, error) {
		r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/extensions/metrics/q", nil)
		r.Header.Set("Authorization", "Bearer "+token(account))
		r.Header.Set("Argocd-Application-Name", "team-a:web")
		r.Header.Set("Argocd-Project-Name", "team-a")
		resp, err := client.Do(r)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	const aliceClients, bobClients, bobRequests = 4, 2, 3
	var stop atomic.Bool
	var aliceOK, aliceFailed, bobAllowed, bobDenied atomic.Int64
	var firstFailure atomic.Value
	var alice, bob sync.WaitGroup
	for range aliceClients {
		alice.Go(func() {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for !stop.Load() {
				code, body, err := send(client, "alice")
				if err != nil || code != http.StatusOK {
					aliceFailed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprint(code, body, err))
					continue
				}
				aliceOK.Add(1)
			}
		})
	}
	for range bobClients {
		bob.Go(func() {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for range bobRequests {
				code, body, err := send(client, "bob")
				switch {
				case err != nil:
					firstFailure.CompareAndSwap(nil, "bob: "+err.Error())
				case code == http.StatusOK:
					bobAllowed.Add(1)
				case strings.Contains(body, "over its memory limit"):
					bobDenied.Add(1)
				default:
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("bob: %d %s, want a denial for memory", code, body))
				}
			}
		})
	}
	bob.Wait()
	stop.Store(true)
	alice.Wait()
	if n := bobAllowed.Load(); n > 0 {
		t.Errorf("%d of bob's requests were decided: the policy built its 512 MiB", n)
	}
	if n := bobDenied.Load(); n != bobClients*bobRequests {
		t.Errorf("%d of bob's %d requests denied; first failure: %v", n, bobClients*bobRequests, firstFailure.Load())
	}
	if aliceFailed.Load() > 0 || aliceOK.Load() == 0 {
		t.Fatalf("alice: %d answered, %d failed; the first: %v", aliceOK.Load(), aliceFailed.Load(), firstFailure.Load())
	}
	t.Logf("alice: %d requests answered while bob's %d were denied", aliceOK.Load(), bobDenied.Load())
}
