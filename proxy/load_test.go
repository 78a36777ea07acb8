package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// TestReloadUnderLoad: while clients send requests without pause, the
// snapshot changes ten times a second (an Application is added and an
// extension's header changes every time, the policy every fifth time); no
// request fails, and every one is answered by a backend.
func TestReloadUnderLoad(t *testing.T) {
	e := newEnv(t, nil)
	const clients, reloads = 8, 20
	var stop atomic.Bool
	var ok, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	alice := token("alice")
	for range clients {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for !stop.Load() {
				r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/extensions/metrics/q", nil)
				r.Header.Set("Authorization", "Bearer "+alice)
				r.Header.Set("Argocd-Application-Name", "team-a:web")
				r.Header.Set("Argocd-Project-Name", "team-a")
				resp, err := client.Do(r)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, body))
					continue
				}
				ok.Add(1)
			}
		})
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range reloads {
		<-tick.C
		c := baseContent(e.def, e.prod)
		c.Applications = append(c.Applications, snapshot.Application{Namespace: "team-a", Name: fmt.Sprintf("app-%d", i), Project: "team-a"})
		c.Policy[".manifest"] = fmt.Appendf(nil, `{"revision": "r%d"}`, i/5)
		c.Extensions[0].Backend.Services[0].Headers[1].Value = fmt.Sprint("v", i)
		e.load(c)
	}
	stop.Store(true)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d requests failed during %d reloads; the first: %v", failed.Load(), failed.Load()+ok.Load(), reloads, firstFailure.Load())
	}
	if ok.Load() < reloads {
		t.Fatalf("only %d requests during the reloads", ok.Load())
	}
}

// TestOneHangingBackendHurtsNoOther: requests to an extension whose backend
// hangs stay in flight; requests to the other extensions keep answering,
// through their own connection pools.
func TestOneHangingBackendHurtsNoOther(t *testing.T) {
	release := make(chan struct{})
	var hanging sync.WaitGroup
	const hung = 64
	hanging.Add(hung)
	hang := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		hanging.Done()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	e := newEnv(t, nil)
	e.withExtension(system("hangs", snapshot.Backend{Services: services(hang.URL)}, snapshot.Limits{}))
	alice := token("alice")
	done := make(chan int, hung)
	for range hung {
		go func() {
			resp, _ := e.do(req{path: "/api/v1/extensions/hangs/x", token: alice})
			done <- resp.StatusCode
		}()
	}
	hanging.Wait() // every request sits in the hanging backend
	for i := range 50 {
		resp, body := e.do(req{path: "/api/v1/extensions/metrics/q", token: alice, header: app("team-a", "web", "team-a")})
		if resp.StatusCode != 200 {
			t.Fatalf("request %d to another extension: %d %s", i, resp.StatusCode, body)
		}
	}
	close(release)
	for range hung {
		<-done
	}
}

// TestBackendConnectionsAreReused: many requests from a few clients open
// about as many backend connections as there are clients, not one per
// request (Argo CD keeps two idle per backend, so most requests dial).
func TestBackendConnectionsAreReused(t *testing.T) {
	var opened atomic.Int64
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	backend.Start()
	defer backend.Close()
	e := newEnv(t, nil)
	e.withExtension(system("pooled", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	const clients, each = 16, 25
	alice := token("alice")
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range clients {
		wg.Go(func() {
			for range each {
				if resp, _ := e.do(req{path: "/api/v1/extensions/pooled/x", token: alice}); resp.StatusCode != 200 {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d requests failed", bad.Load())
	}
	// A request that finds no idle connection dials one, and may then get
	// another's that came free first; the one it dialed stays idle. So a
	// few more than the clients, never one per request.
	if n := opened.Load(); n > 2*clients {
		t.Fatalf("%d backend connections for %d requests from %d clients, want about %d", n, clients*each, clients, clients)
	}
}
