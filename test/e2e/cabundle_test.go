package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/webhook/certs"
)

// TestControllerPublishesItsCA: the controller (self-managed certificates,
// the shipped defaults) keeps ConfigMap gatehouse-ca-bundle holding exactly the CA
// bundle of its Secret, which verifies the webhook's and the proxy's
// certificates: what a ServiceMonitor or a BackendTLSPolicy reads instead
// of a Secret holding keys.
func TestControllerPublishesItsCA(t *testing.T) {
	c := sharedCluster(t)
	want := string(proxyCertSecret(t, "gatehouse-webhook-tls")["ca.crt"])
	var cm corev1.ConfigMap
	waitFor(t, 30*time.Second, "ConfigMap gatehouse-ca-bundle holds the CA bundle", func() bool {
		err := c.client.Get(context.Background(), types.NamespacedName{Namespace: "gatehouse-system", Name: "gatehouse-ca-bundle"}, &cm)
		return err == nil && cm.Data["ca.crt"] == want
	})
	if len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
		t.Fatalf("ConfigMap gatehouse-ca-bundle holds %d keys and %d binary keys, want only ca.crt", len(cm.Data), len(cm.BinaryData))
	}
}

// TestCAPublisher: against the real API server, the publisher creates the
// ConfigMap, follows the file, keeps the last good bundle when the file
// holds none, and puts back exactly ca.crt when someone edited the
// ConfigMap.
func TestCAPublisher(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const ns = "ca-publisher"
	if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.crt")
	bundle := func(name string) string {
		ca, err := testkit.NewCA(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := testkit.WriteAtomic(file, ca.PEM); err != nil {
			t.Fatal(err)
		}
		return string(ca.PEM)
	}
	first := bundle("first")
	pub, err := certs.NewPublisher(certs.PublisherOptions{Client: c.client, Namespace: ns, Name: "ca", File: file})
	if err != nil {
		t.Fatal(err)
	}
	published := func() corev1.ConfigMap {
		t.Helper()
		var cm corev1.ConfigMap
		if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ca"}, &cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	steps := []struct {
		name    string
		do      func() string // returns the bundle the ConfigMap must hold
		wantErr bool
	}{
		{"created", func() string { return first }, false},
		{"a new bundle replaces it", func() string { return bundle("second") }, false},
		{"a file without a certificate is refused; the last good bundle stays", func() string {
			was := published().Data["ca.crt"]
			if err := os.WriteFile(file, []byte("not PEM"), 0o600); err != nil {
				t.Fatal(err)
			}
			return was
		}, true},
		{"someone's edit is put back", func() string {
			b := bundle("third")
			if err := pub.Publish(ctx); err != nil {
				t.Fatal(err)
			}
			cm := published()
			cm.Data = map[string]string{"ca.crt": "edited", "extra": "x"}
			if err := c.client.Update(ctx, &cm); err != nil {
				t.Fatal(err)
			}
			// A publisher that restarts (a new replica) compares with
			// the API server, not with what it wrote last.
			if pub, err = certs.NewPublisher(certs.PublisherOptions{Client: c.client, Namespace: ns, Name: "ca", File: file}); err != nil {
				t.Fatal(err)
			}
			return b
		}, false},
	}
	for _, s := range steps {
		want := s.do()
		err := pub.Publish(ctx)
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: Publish: %v, want an error: %v", s.name, err, s.wantErr)
		}
		cm := published()
		if cm.Data["ca.crt"] != want || len(cm.Data) != 1 {
			t.Fatalf("%s: the ConfigMap holds %d keys, ca.crt %q…, want exactly the bundle", s.name, len(cm.Data), cm.Data["ca.crt"][:min(40, len(cm.Data["ca.crt"]))])
		}
	}
}
