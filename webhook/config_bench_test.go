package webhook

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// BenchmarkPolicyConfigMapReview is `kubectl apply` of a policy ConfigMap
// of about 1 MiB (the most a ConfigMap holds): the AdmissionReview decoded,
// the data checked against the model, the policy compiled alone, and
// assembled with another policy ConfigMap. Target 200 ms.
func BenchmarkPolicyConfigMapReview(b *testing.B) {
	cm := configMap("team-grants", policyLabel, map[string]string{"data.json": string(testkit.Grants(1000 << 10))})
	obj, err := json.Marshal(cm)
	if err != nil {
		b.Fatal(err)
	}
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},` +
		`"namespace":"argocd","name":"team-grants","operation":"CREATE","userInfo":{"username":"admin"},"object":` + string(obj) + `}}`
	other := configMap("team-policy", policyLabel, map[string]string{"data.json": `{"gatehouse": {"config": {"defaultRoles": ["role:readonly"]}}}`})
	h := newConfigMapHandler(HandlerOptions{Logger: slog.New(slog.DiscardHandler)}, newConfigRules("argocd", objects([]corev1.ConfigMap{other}, nil), policies.Limits{}))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, pathConfigMaps, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"allowed":true`) {
			b.Fatalf("%d %s", rec.Code, rec.Body.String()[:min(300, rec.Body.Len())])
		}
	}
}
