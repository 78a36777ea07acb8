package controlplane

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/sidecar/snapshot"
)

// TestPublishedVersionsArePinned: the version agents are told for the files
// a build gives (kinds, default modes, the algorithm) is what every replica
// and every running agent computes; it must not move.
func TestPublishedVersionsArePinned(t *testing.T) {
	s, err := ServerSnapshot([]snapshot.File{
		{Path: "gatehouse.json", Kind: snapshot.KindConfig, Data: []byte("{}\n")},
		{Path: "secrets/argocd-secret/server.secretkey", Kind: snapshot.KindSecret, Data: []byte("k3y")},
		{Path: "policy/extensions/policy.rego", Kind: snapshot.KindPolicy, Data: []byte("package gatehouse.extensions\n")},
		{Path: "applications/0a.json", Kind: snapshot.KindConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "5c4b537d1eb3363cd0401773215e204357f5eb60cdef386a0b3688c16c8e14bc"; s.Version() != want {
		t.Errorf("version %s, want %s", s.Version(), want)
	}
}
