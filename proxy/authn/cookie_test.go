package authn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// argoCDCookies writes a token the way Argo CD's util/http splitCookie does:
// one cookie "argocd.token=<token>" if it fits, else
// "argocd.token=<n>:<part0>", "argocd.token-1=<part1>", ...
func argoCDCookies(token string, maxValueLength int) []string {
	n := (len(token) + maxValueLength - 1) / maxValueLength
	var out []string
	for i, j := 0, 0; i < len(token); i, j = i+maxValueLength, j+1 {
		part := token[i:min(i+maxValueLength, len(token))]
		switch {
		case j == 0 && n == 1:
			out = append(out, fmt.Sprintf("%s=%s", CookieName, part))
		case j == 0:
			out = append(out, fmt.Sprintf("%s=%d:%s", CookieName, n, part))
		default:
			out = append(out, fmt.Sprintf("%s-%d=%s", CookieName, j, part))
		}
	}
	return out
}

func request(cookies []string, authorization ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/extensions/metrics/api", nil)
	if len(cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	for _, a := range authorization {
		r.Header.Add("Authorization", a)
	}
	return r
}

func TestTokenFromRequest(t *testing.T) {
	// A token with large groups claims, as Argo CD writes it for an SSO user
	// in many groups: longer than one cookie.
	var groups []string
	for i := range 400 {
		groups = append(groups, fmt.Sprintf("some-long-group-name-%03d", i))
	}
	long := localToken(with(localClaims("alice:login"), "groups", groups))
	short := localToken(localClaims("alice:login"))
	split := argoCDCookies(long, 4000)
	if len(split) < 3 {
		t.Fatalf("test token should need at least 3 cookies, needs %d", len(split))
	}

	tests := []struct {
		name      string
		r         *http.Request
		want      string
		wantErr   error
		fragments []string
	}{
		{name: "single cookie", r: request(argoCDCookies(short, 4000)), want: short},
		{name: "token split over several cookies", r: request(split), want: long},
		{name: "split cookies in any order, among other cookies", r: request(append([]string{"other=1", split[len(split)-1], "argocd.tokenfoo=x"}, split[:len(split)-1]...)), want: long},
		{name: "a chunk sent twice keeps the last value, as in Argo CD", r: request(append([]string{split[1] + "garbage"}, split...)), want: long},
		{name: "Authorization: Bearer", r: request(nil, "Bearer "+short), want: short},
		{name: "bearer scheme is case-insensitive", r: request(nil, "bearer  "+short), want: short},
		{name: "Basic credentials are not a token", r: request(nil, "Basic YWxpY2U6cHc="), wantErr: errNoToken},
		{name: "the cookie wins over Bearer", r: request(argoCDCookies(short, 4000), "Bearer other"), want: short},
		{name: "a damaged cookie does not hide a Bearer token", r: request([]string{"argocd.token=x:y"}, "Bearer "+short), want: short},
		{name: "an empty cookie (after logout) is no token", r: request([]string{"argocd.token="}), wantErr: errNoToken},
		{name: "nothing", r: request(nil), wantErr: errNoToken, fragments: []string{"sign in"}},
		{
			name:      "a missing chunk is named",
			r:         request(append(split[:1:1], split[2:]...)),
			wantErr:   errMalformed,
			fragments: []string{"argocd.token-1 is missing", "sign in"},
		},
		{name: "count is not a number", r: request([]string{"argocd.token=x:abc"}), wantErr: errMalformed},
		{name: "count of zero", r: request([]string{"argocd.token=0:abc"}), wantErr: errMalformed},
		{name: "count larger than the cookies sent", r: request([]string{"argocd.token=999999999:abc", "argocd.token-1=def"}), wantErr: errMalformed},
		{name: "two colons", r: request([]string{"argocd.token=2:a:b", "argocd.token-1=c"}), wantErr: errMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TokenFromRequest(tt.r)
			wantErr(t, err, tt.wantErr, tt.fragments...)
			if got != tt.want {
				t.Errorf("token = %.40q…, want %.40q…", got, tt.want)
			}
		})
	}
}

func TestAuthenticateWithSplitCookie(t *testing.T) {
	var groups []string
	for i := range 300 {
		groups = append(groups, fmt.Sprintf("group-%03d", i))
	}
	long := localToken(with(localClaims("alice:login"), "groups", groups))
	a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
	id, err := a.Authenticate(context.Background(), request(argoCDCookies(long, 4000)))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if id.Username != "alice" || len(id.Groups) != 300 {
		t.Errorf("got %s with %d groups, want alice with 300", id.Username, len(id.Groups))
	}

	_, err = a.Authenticate(context.Background(), request(nil))
	wantErr(t, err, errNoToken)
}

func TestCookieTooLong(t *testing.T) {
	part := strings.Repeat("a", 4000)
	cookies := []string{"argocd.token=40:" + part}
	for i := 1; i < 40; i++ {
		cookies = append(cookies, fmt.Sprintf("argocd.token-%d=%s", i, part))
	}
	_, err := TokenFromRequest(request(cookies))
	wantErr(t, err, errMalformed, "bytes")
}
