package opacompat

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/keys"
	"github.com/open-policy-agent/opa/v1/plugins/rest"

	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// What Gatehouse pushes, OPA's own OCI downloader pulls, and reads as the
// same bundle: the contract of `gatehouse policy push`, from OPA's side.
func TestOPAPullsWhatGatehousePushes(t *testing.T) {
	reg := testkit.StartRegistry(testkit.RegistryAnonymous, false)
	defer reg.Close()
	data, err := policies.DecodeData([]byte(`{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := policies.WriteTarball(&buf, policies.DefaultBundle(data), nil, policies.WriteOptions{Revision: "opa-1"}); err != nil {
		t.Fatal(err)
	}
	pushed, err := source.NewFetcher(source.Options{}).Push(context.Background(), reg.URL("policies/grants:v1"), buf.Bytes(), source.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}

	client, err := rest.New([]byte(fmt.Sprintf(`{"url": "http://%s", "type": "oci"}`, reg.Host)), map[string]*keys.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := download.Config{}
	if err := cfg.ValidateAndInjectDefaults(); err != nil {
		t.Fatal(err)
	}
	var got *download.Update
	d := download.NewOCI(cfg, client, reg.Host+"/policies/grants:v1", t.TempDir()).WithCallback(func(_ context.Context, u download.Update) error {
		got = &u
		return nil
	})
	if err := d.Trigger(context.Background()); err != nil {
		t.Fatalf("OPA could not pull the bundle Gatehouse pushed: %v", err)
	}
	if got == nil || got.Bundle == nil {
		t.Fatalf("OPA pulled nothing: %+v", got)
	}
	if got.Bundle.Manifest.Revision != "opa-1" || got.ETag != strings.TrimPrefix(pushed.LayerDigest, "sha256:") || len(got.Bundle.Modules) != 1 {
		t.Fatalf("OPA read revision %q, etag %q, %d modules; want opa-1, %s, the default policy",
			got.Bundle.Manifest.Revision, got.ETag, len(got.Bundle.Modules), pushed.LayerDigest)
	}
	if !bytes.Equal(got.Bundle.Modules[0].Raw, policies.DefaultPolicy()) {
		t.Error("OPA read a different policy than Gatehouse pushed")
	}
}
