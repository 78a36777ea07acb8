package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// /readyz is 200 while a verified snapshot is served, and says when the
// agent is behind or stale and why; it turns 503 for a Pod that has been
// behind for too long for a reason of its own, never for a version every
// replica refuses as invalid.
func TestReadiness(t *testing.T) {
	const (
		v1 = "1111111111111111aaaa"
		v2 = "2222222222222222bbbb"
	)
	diskFull := errors.New("write config/a.json: no space left on device")
	invalid := errors.New("proxy refused version: extension x has no backend")
	tests := []struct {
		name         string
		unreadyAfter time.Duration
		events       func(h *health, advance func(time.Duration))
		wantCode     int
		wantStale    bool
		wantBody     []string
	}{
		{"nothing served yet", 0, func(h *health, _ func(time.Duration)) { h.heard(v1) },
			503, false, []string{"no snapshot served yet"}},
		{"damaged volume at start", 0, func(h *health, _ func(time.Duration)) {
			h.damagedAtStart(errors.New("load snapshot x: config/a.json: sha256 ab, manifest says cd"))
		}, 503, false, []string{"no snapshot served yet", "damaged", "sha256 ab"}},
		{"in sync", 0, func(h *health, _ func(time.Duration)) { h.served(v1); h.heard(v1) },
			200, false, []string{"serving " + v1}},
		{"briefly behind", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			advance(30 * time.Second)
		}, 200, false, []string{"serving " + v1, "behind", "222222222222", "30s", "not applied yet"}},
		{"stale, retrying a full disk", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			h.failed(v2, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT, diskFull)
			advance(2 * time.Minute)
		}, 200, true, []string{"serving " + v1, "stale", "2m0s", "failed, retrying", "no space left on device"}},
		{"stale past the unready bound", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			h.failed(v2, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT, diskFull)
			advance(6 * time.Minute)
		}, 503, true, []string{"stale", "no space left on device"}},
		{"stale past the bound on a slow download", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			advance(6 * time.Minute)
		}, 503, true, []string{"stale", "not applied yet"}},
		{"stale past the bound on invalid content stays ready", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			h.failed(v2, agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC, invalid)
			advance(time.Hour)
		}, 200, true, []string{"serving " + v1, "stale", "rejected as invalid", "no backend"}},
		{"never unready when told so", -1, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			h.failed(v2, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT, diskFull)
			advance(time.Hour)
		}, 200, true, []string{"stale"}},
		{"caught up", 0, func(h *health, advance func(time.Duration)) {
			h.served(v1)
			h.heard(v2)
			h.failed(v2, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT, diskFull)
			advance(time.Hour)
			h.served(v2)
		}, 200, false, []string{"serving " + v2}},
		{"disconnected, in sync", 0, func(h *health, _ func(time.Duration)) {
			h.served(v1)
			h.heard(v1)
			h.connection(false, errors.New("connection refused"))
		}, 200, false, []string{"serving " + v1, "disconnected from the control plane: connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_800_000_000, 0)
			unready := tt.unreadyAfter
			if unready == 0 {
				unready = DefaultUnreadyAfter
			}
			h := &health{staleAfter: DefaultStaleAfter, unreadyAfter: unready, now: func() time.Time { return now }}
			tt.events(h, func(d time.Duration) { now = now.Add(d) })
			a := &Agent{health: h}
			rec := httptest.NewRecorder()
			a.AdminHandler(prometheus.NewRegistry()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			body := rec.Body.String()
			if rec.Code != tt.wantCode {
				t.Errorf("GET /readyz: %d %q, want %d", rec.Code, body, tt.wantCode)
			}
			if st := a.Status(); st.Stale != tt.wantStale {
				t.Errorf("stale = %v, want %v (%+v)", st.Stale, tt.wantStale, st)
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("/readyz says %q, want it to mention %q", body, want)
				}
			}
		})
	}
}
