package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// TestTrailersFollowTheHeaderRule: a chunked request over a real
// connection announces and sends trailers named like identity headers,
// credentials and with '_'; the backend gets only the ordinary one. The
// backend's response trailers pass by the same rule (gRPC's status does,
// a cookie or an identity name does not), announced or not.
func TestTrailersFollowTheHeaderRule(t *testing.T) {
	got := make(chan http.Header, 1)
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Trailer.Clone()
		w.Header().Set("Trailer", "Grpc-Status, Set-Cookie, Argocd-Username, X_Late_Announced")
		w.Header().Set("Content-Type", "application/grpc-web")
		_, _ = io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("Set-Cookie", "argocd.token=attacker; Path=/")
		w.Header().Set("Argocd-Username", "admin")
		w.Header().Set("X_Late_Announced", "x")
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "ok")
		w.Header().Set(http.TrailerPrefix+"Content-Length", "0")
		w.Header().Set(http.TrailerPrefix+"Authorization", "Bearer x")
	})
	e := newEnv(t, nil)
	e.withExtension(system("trailers", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))

	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	spoofed := []string{"Argocd-Username: admin", "argocd_user_groups: admins", "Argocd.User-Id: admin", "Authorization: Bearer stolen",
		"Cookie: argocd.token=stolen", "X-Forwarded-For: 10.9.9.9", "Content-Type: text/evil", "Host: evil.example"}
	var announce []string
	for _, s := range spoofed {
		name, _, _ := strings.Cut(s, ":")
		announce = append(announce, name)
	}
	_, err = fmt.Fprintf(conn, "POST /api/v1/extensions/trailers/x HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer %s\r\n"+
		"Transfer-Encoding: chunked\r\nTrailer: X-Checksum, %s\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Unannounced: 1\r\n%s\r\n\r\n",
		token("alice"), strings.Join(announce, ", "), strings.Join(spoofed, "\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "body" {
		t.Fatalf("status %d, body %q, %v", resp.StatusCode, body, err)
	}
	if tr := <-got; len(tr) != 1 || tr.Get("X-Checksum") != "abc" {
		t.Errorf("the backend got trailers %v, want only X-Checksum", tr)
	}
	var names []string
	for name := range resp.Trailer {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"Grpc-Message", "Grpc-Status"}) || resp.Trailer.Get("Grpc-Status") != "0" {
		t.Errorf("the client got trailers %v, want Grpc-Message and Grpc-Status", resp.Trailer)
	}
}
