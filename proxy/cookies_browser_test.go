package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
	"github.com/gatehouse-dev/gatehouse/test/testkit/browser"
)

// TestCookiesAsChromiumStoresThem is the differential test of the cookie
// rule: headless Chromium loads pages whose backend sets one hostile or
// ordinary Set-Cookie line, once straight from the backend (what the
// browser makes of the line: the reference for headers.ParseSetCookie)
// and once through the proxy (what passes). Through the proxy Chromium
// never stores a cookie it would send back as Argo CD's (argocd.*, read
// from the Cookie header it would send as net/http reads it), nor one for
// a path beyond the extension's, nor a domain cookie; and it stores
// exactly the cookies headers.CookieAllowed lets through.
//
// It needs Chromium (test/tools/install-browser.sh; GATEHOUSE_CHROMIUM
// names another binary). Without one it is skipped, or fails when
// GATEHOUSE_E2E_BROWSER=required, as make test sets.
func TestCookiesAsChromiumStoresThem(t *testing.T) {
	bin := browser.Require(t, "the cookie differential test")
	lines := []string{
		"session=abc; Path=/extensions/cookies; HttpOnly",
		"session=abc",
		"s=a=b; Path=/extensions/cookies/",
		"s=1; Path=extensions",
		"argocd.token=attacker; Path=/extensions/cookies",
		"ARGOCD.TOKEN=attacker; Path=/extensions/cookies",
		"argocd.token.1=attacker; Path=/extensions/cookies",
		"\targocd.token =attacker; Path=/extensions/cookies",
		"=argocd.token=attacker; Path=/extensions/cookies",
		" = argocd.token=attacker; Path=/",
		"argocd.token; Path=/extensions/cookies",
		"=x; Path=/extensions/cookies",
		"\"argocd.token\"=attacker; Path=/extensions/cookies",
		"argocd token=attacker; Path=/extensions/cookies",
		"argocd.token\u00a0=attacker; Path=/extensions/cookies",
		"s=1; Path=/",
		"s=1; Path=/api/v1",
		"s=1; Path=/extensions/other",
		"s=1; Path=/extensions/cookiesevil",
		"s=1; Path=/extensions/cookies; Domain=127.0.0.1",
		"s=1; Path=/extensions/cookies; Path=/",
		"s=1; Path=/; Path=/extensions/cookies/" + strings.Repeat("p", 1024),
		"s=1; path=/extensions/cookies; pAtH=/extensions/cookies/x",
		"__Host-s=1; Path=/",
		"=__Host-s=1; Path=/extensions/cookies",
		"s=" + strings.Repeat("v", 4096) + "; Path=/extensions/cookies",
	}
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.URL.Query().Get("line"))
		if err != nil || i < 0 || i >= len(lines) {
			http.Error(w, "no such line", http.StatusBadRequest)
			return
		}
		w.Header()["Set-Cookie"] = []string{lines[i]}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>cookie</title>"))
	})
	e := newEnv(t, nil)
	e.withExtension(system("cookies", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	b := browser.Launch(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := b.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scope := &headers.CookieScope{Extension: "cookies", RequestPath: "/extensions/cookies/api/query"}
	// The proxy authenticates the navigation by a header Chromium adds.
	if _, err := pg.Call(ctx, "Network.enable", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Call(ctx, "Network.setExtraHTTPHeaders", map[string]any{
		"headers": map[string]string{"Authorization": "Bearer " + token("alice")}}); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		query := "/extensions/cookies/api/query?line=" + strconv.Itoa(i)
		direct := cookiesFrom(ctx, t, b, pg, backend.URL+query)
		via := cookiesFrom(ctx, t, b, pg, e.srv.URL+query)
		short := fmt.Sprintf("%.70q", line)

		t.Logf("%s: Chromium stores %+v directly, %+v through the proxy", short, direct, via)
		if line == "argocd.token=attacker; Path=/extensions/cookies" && len(direct) != 1 {
			t.Errorf("straight from a backend Chromium was to store Argo CD's cookie (the attack), and stores %+v", direct)
		}
		// The parser against the browser.
		c, ok := headers.ParseSetCookie(line)
		if len(direct) == 1 {
			d := direct[0]
			path := c.Path
			if path == "" {
				path = "/extensions/cookies/api"
			}
			if !ok || d.Name != c.Name || d.Value != c.Value || c.Paths == 1 && d.Path != path {
				t.Errorf("%s: Chromium stores %+v; ParseSetCookie says %+v, %v", short, d, c, ok)
			}
		}
		// The rule, through the proxy.
		for _, k := range via {
			sent := k.Value
			if k.Name != "" {
				sent = k.Name + "=" + k.Value
			}
			if parsed, err := http.ParseCookie(sent); err == nil {
				for _, p := range parsed {
					if strings.HasPrefix(strings.ToLower(p.Name), "argocd") {
						t.Errorf("%s: through the proxy Chromium stores %+v and sends it as Argo CD's %s", short, k, p.Name)
					}
				}
			}
			if k.Path != "/extensions/cookies" && !strings.HasPrefix(k.Path, "/extensions/cookies/") {
				t.Errorf("%s: through the proxy Chromium stores %+v for a path beyond the extension's", short, k)
			}
			if strings.HasPrefix(k.Domain, ".") {
				t.Errorf("%s: through the proxy Chromium stores a domain cookie %+v", short, k)
			}
		}
		switch want := headers.CookieAllowed(line, scope); {
		case want && (len(via) != 1 || len(direct) != 1 || via[0] != direct[0]):
			t.Errorf("%s: allowed, but through the proxy Chromium stores %+v (directly %+v)", short, via, direct)
		case !want && len(via) != 0:
			t.Errorf("%s: refused, but through the proxy Chromium stores %+v", short, via)
		}
	}
}

// storedCookie is a cookie as Chromium's cookie store holds it.
type storedCookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Domain string `json:"domain"`
	Path   string `json:"path"`
}

// cookiesFrom empties the cookie store, loads url in the page, and
// returns the cookies the browser stored from it.
func cookiesFrom(ctx context.Context, t *testing.T, b *browser.Browser, pg *browser.Page, url string) []storedCookie {
	t.Helper()
	if _, err := b.Call(ctx, "", "Storage.clearCookies", nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.Navigate(ctx, url); err != nil {
		t.Fatal(err)
	}
	var got struct{ Cookies []storedCookie }
	if err := b.Decode(ctx, "", "Storage.getCookies", nil, &got); err != nil {
		t.Fatal(err)
	}
	return got.Cookies
}
