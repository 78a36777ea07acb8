package webhook

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

func testHandlers(t testing.TB) (apps, projects http.Handler) {
	t.Helper()
	c := NewMemoryCluster()
	p := &v1alpha1.AppProject{Spec: v1alpha1.AppProjectSpec{SourceNamespaces: []string{"team-a"}}}
	p.Name, p.Namespace = "team-a", "argocd"
	c.AddProject(p)
	s, _ := settings.Build("argocd", map[string]string{settings.KeyApplicationNamespaces: "team-*"}, nil, settings.Overrides{})
	o := HandlerOptions{Rules: NewRules(func() *settings.Settings { return s }, c), Logger: slog.New(slog.DiscardHandler)}
	return NewApplicationHandler(o), NewAppProjectHandler(o)
}

func appReview(op, ns, project string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
	"kind":{"group":"argoproj.io","version":"v1alpha1","kind":"Application"},"namespace":"` + ns + `","name":"app","operation":"` + op + `",
	"userInfo":{"username":"alice"},
	"object":{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"app","namespace":"` + ns + `",
	"managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:spec":{}}}]},
	"spec":{"project":"` + project + `","source":{"repoURL":"https://example.com/x.git"},"destination":{"server":"https://kubernetes.default.svc"}},
	"status":{"sync":{"status":"Synced"}}}}}`
}

type answer struct {
	code     int
	response struct {
		UID      string   `json:"uid"`
		Allowed  bool     `json:"allowed"`
		Warnings []string `json:"warnings"`
		Status   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	}
	apiVersion string
	body       string
}

func post(t *testing.T, h http.Handler, contentType, body string) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, PathApplications, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw, _ := io.ReadAll(rec.Result().Body)
	a := answer{code: rec.Code, body: string(raw)}
	if rec.Code == http.StatusOK {
		var out struct {
			APIVersion string          `json:"apiVersion"`
			Response   json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("response is not an AdmissionReview: %v\n%s", err, raw)
		}
		a.apiVersion = out.APIVersion
		if err := json.Unmarshal(out.Response, &a.response); err != nil {
			t.Fatalf("decode response: %v", err)
		}
	}
	return a
}

func TestHandlerAnswersReviews(t *testing.T) {
	apps, _ := testHandlers(t)
	tests := []struct {
		name        string
		body        string
		wantAllowed bool
		wantCode    int
		wantMessage string
	}{
		{"permitted Application", appReview("CREATE", "team-a", "team-a"), true, 0, ""},
		{"project does not permit the namespace", appReview("CREATE", "team-b", "team-a"), false, 403, `does not permit Applications from namespace "team-b"`},
		{"namespace not enabled", appReview("CREATE", "sandbox", "team-a"), false, 403, `namespace "sandbox" is not enabled`},
		{"object that does not decode is denied with the decode error",
			strings.Replace(appReview("CREATE", "team-a", "team-a"), `"project":"team-a"`, `"project":42`, 1),
			false, 400, "cannot decode Application team-a/app"},
		{"wrong kind for this endpoint",
			strings.Replace(appReview("CREATE", "team-a", "team-a"), `"kind":"Application"},"namespace"`, `"kind":"AppProject"},"namespace"`, 1),
			false, 400, "this webhook reviews Application.argoproj.io"},
		{"UPDATE without oldObject", appReview("UPDATE", "team-a", "team-a"), false, 400, "carries no oldObject"},
		{"unknown operation", appReview("PATCH", "team-a", "team-a"), false, 400, `unknown operation "PATCH"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, apps, "application/json", tt.body)
			if a.code != http.StatusOK {
				t.Fatalf("HTTP %d, want 200: %s", a.code, a.body)
			}
			if a.response.UID != "u-1" || a.apiVersion != "admission.k8s.io/v1" {
				t.Errorf("response uid %q apiVersion %q: must echo the request", a.response.UID, a.apiVersion)
			}
			if a.response.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%s)", a.response.Allowed, tt.wantAllowed, a.body)
			}
			if tt.wantAllowed {
				return
			}
			if a.response.Status == nil || a.response.Status.Code != tt.wantCode || !strings.Contains(a.response.Status.Message, tt.wantMessage) {
				t.Errorf("status = %+v, want code %d mentioning %q", a.response.Status, tt.wantCode, tt.wantMessage)
			}
		})
	}
}

func TestHandlerRejectsMalformedReviews(t *testing.T) {
	apps, _ := testHandlers(t)
	tests := []struct {
		name, contentType, body string
		wantCode                int
	}{
		{"not JSON", "application/json", "{not json", 400},
		{"not an AdmissionReview", "application/json", `{"apiVersion":"v1","kind":"Pod"}`, 400},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400},
		{"no uid", "application/json", strings.Replace(appReview("CREATE", "team-a", "team-a"), `"uid":"u-1",`, "", 1), 400},
		{"unsupported version", "application/json", strings.Replace(appReview("CREATE", "team-a", "team-a"), "admission.k8s.io/v1", "admission.k8s.io/v2", 1), 400},
		{"request is not an object", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}`, 400},
		{"wrong content type", "text/plain", appReview("CREATE", "team-a", "team-a"), 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, apps, tt.contentType, tt.body)
			if a.code != tt.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", a.code, tt.wantCode, a.body)
			}
		})
	}
}

func TestHandlerAllowsDeleteOfApplication(t *testing.T) {
	apps, _ := testHandlers(t)
	body := strings.Replace(appReview("DELETE", "sandbox", "nope"), `"object":`, `"oldObject":`, 1)
	if a := post(t, apps, "application/json", body); !a.response.Allowed {
		t.Fatalf("DELETE denied: %s", a.body)
	}
}

func FuzzDecodeReview(f *testing.F) {
	f.Add([]byte(appReview("CREATE", "team-a", "team-a")))
	f.Add([]byte(appReview("UPDATE", "team-b", "x")))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":{"spec":[]}}}`))
	f.Add([]byte(`{}`))
	apps, projects := testHandlers(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range []http.Handler{apps, projects} {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("HTTP %d for fuzzed review", rec.Code)
			}
		}
	})
}
