package kube

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// expectTrim is the reference: decode, delete, compare.
func expectTrim(t *testing.T, in []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		return nil
	}
	trimApp := func(a any) {
		m, ok := a.(map[string]any)
		if !ok {
			return
		}
		if st, ok := m["status"]; ok {
			switch st.(type) {
			case map[string]any, []any:
				delete(m, "status")
			}
		}
		if spec, ok := m["spec"].(map[string]any); ok {
			for k := range spec {
				if k != "project" && k != "destination" {
					delete(spec, k)
				}
			}
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			if an, ok := md["annotations"].(map[string]any); ok {
				delete(an, "kubectl.kubernetes.io/last-applied-configuration")
			}
			if mf, ok := md["managedFields"]; ok {
				switch mf.(type) {
				case map[string]any, []any:
					delete(md, "managedFields")
				}
			}
		}
	}
	if top, ok := v.(map[string]any); ok {
		trimApp(top["object"])
		if items, ok := top["items"].([]any); ok {
			for _, it := range items {
				trimApp(it)
			}
		}
	}
	return v
}

func TestTrimValue(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"watch event", `{"type":"MODIFIED","object":{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","managedFields":[{"manager":"x"}],"labels":{"status":"keep"}},"spec":{"project":"p"},"status":{"sync":{"status":"Synced"}}}}`,
			`{"type":"MODIFIED","object":{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","labels":{"status":"keep"}},"spec":{"project":"p"}}}`},
		{"list", `{"kind":"ApplicationList","items":[{"metadata":{"name":"a"},"status":{"x":1}},{"status":{},"metadata":{"managedFields":[],"name":"b"}}]}`,
			`{"kind":"ApplicationList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`},
		{"error event keeps its string status", `{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}`,
			`{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}`},
		{"strings that look like structure", `{"object":{"metadata":{"labels":{"x":"}{\"status\":[","y":"\\"}},"status":{"a":"}"}}}`,
			`{"object":{"metadata":{"labels":{"x":"}{\"status\":[","y":"\\"}}}}`},
		{"whitespace", " { \"object\" : { \"status\" : { } , \"spec\" : 1 } } ", ` {"object":{"spec":1}} `},
		{"only the dropped member", `{"object":{"status":{}}}`, `{"object":{}}`},
		{"the spec keeps what Gatehouse reads", `{"object":{"spec":{"source":{"repoURL":"x"},"project":"p","syncPolicy":{},"destination":{"name":"d"},"info":[]}}}`,
			`{"object":{"spec":{"project":"p","destination":{"name":"d"}}}}`},
		{"kubectl's last-applied copy", `{"object":{"metadata":{"annotations":{"a":"1","kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{}}","b":"2"}}}}`,
			`{"object":{"metadata":{"annotations":{"a":"1","b":"2"}}}}`},
		{"not JSON passes through", `{"object":{"status":{`, `{"object":{"status":{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(trimValue([]byte(tt.in))); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTrimReaderSplitsAStream(t *testing.T) {
	stream := `{"type":"ADDED","object":{"metadata":{"name":"a"},"status":{"h":[1,2]}}}` + "\n" +
		`{"type":"MODIFIED","object":{"metadata":{"name":"a"},"status":{"h":"}"}}}` + "\n"
	got, err := io.ReadAll(newTrimReader(io.NopCloser(strings.NewReader(stream))))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n" + `{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}` + "\n"
	if string(got) != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestTrimTransportOnlyTouchesApplicationCollections(t *testing.T) {
	body := `{"items":[{"metadata":{"name":"a"},"status":{"x":1}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c := &http.Client{Transport: TrimApplications(http.DefaultTransport)}
	for path, trimmed := range map[string]bool{
		"/apis/argoproj.io/v1alpha1/applications":                       true,
		"/apis/argoproj.io/v1alpha1/namespaces/team-a/applications":     true,
		"/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects":      false,
		"/apis/argoproj.io/v1alpha1/namespaces/team-a/applications/one": false,
		"/api/v1/namespaces/argocd/configmaps":                          false,
	} {
		resp, err := c.Get(srv.URL + path) //nolint:noctx // loopback test
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if isTrimmed := !bytes.Contains(got, []byte("status")); isTrimmed != trimmed {
			t.Errorf("%s: trimmed %v, want %v (%s)", path, isTrimmed, trimmed, got)
		}
	}
}

func FuzzTrimValue(f *testing.F) {
	for _, s := range []string{
		`{"type":"MODIFIED","object":{"metadata":{"name":"a","managedFields":[{}]},"status":{"a":[1,{"b":"}"}]}}}`,
		`{"items":[{"status":{},"metadata":{"managedFields":{}}},1,"x",null]}`,
		`{"object":{"status":"Failure"}}`, `[1,2]`, `"s"`, `{"a":"\u0022\\"}`,
		`{"items":[{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := trimValue(in)
		want := expectTrim(t, in)
		if want == nil {
			return // not JSON: anything but a panic is fine
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("trimmed valid JSON into invalid JSON: %v\nin  %s\nout %s", err, in, out)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("in  %s\nout %s", in, out)
		}
	})
}

func TestNextValueAcrossChunks(t *testing.T) {
	stream := strings.Repeat(`{"type":"MODIFIED","object":{"metadata":{"name":"a\"}"},"status":{"h":"]"}}}`+"\n", 2000)
	// A tiny buffer makes values span many chunks.
	r := &trimReader{src: bufio.NewReaderSize(strings.NewReader(stream), 16), body: io.NopCloser(nil)}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(`{"type":"MODIFIED","object":{"metadata":{"name":"a\"}"}}}`+"\n", 2000)
	if string(got) != want {
		t.Fatalf("got %d bytes, want %d: %.200s", len(got), len(want), got)
	}
}
