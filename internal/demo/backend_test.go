package demo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBackendEchoesWhatItWasSentWithoutCredentials(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/query?query=up", nil)
	r.Header.Set("Authorization", "Bearer the-extensions-own-secret")
	r.Header.Set("Cookie", "argocd.token=x")
	r.Header.Set("Argocd-Username", "alice")
	r.Header.Add("X-Forwarded-For", "10.0.0.1")
	r.Header.Add("X-Forwarded-For", "127.0.0.1")
	w := httptest.NewRecorder()
	Backend("in-cluster").ServeHTTP(w, r)
	var e echo
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("answer is not an Echo: %v: %s", err, w.Body)
	}
	want := echo{Backend: "in-cluster", Method: "POST", Path: "/api/v1/query", Query: "query=up", Headers: map[string]string{
		"Authorization": redacted, "Cookie": redacted, "Argocd-Username": "alice", "X-Forwarded-For": "10.0.0.1, 127.0.0.1",
	}}
	if e.Backend != want.Backend || e.Method != want.Method || e.Path != want.Path || e.Query != want.Query || len(e.Headers) != len(want.Headers) {
		t.Fatalf("echo %+v, want %+v", e, want)
	}
	for k, v := range want.Headers {
		if e.Headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, e.Headers[k], v)
		}
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}
