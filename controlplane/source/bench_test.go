package source

import (
	"bytes"
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// megabyteBundle is the default policy with about 1 MiB of grants.
func megabyteBundle(b testing.TB) []byte {
	b.Helper()
	data, err := policies.DecodeData(testkit.Grants(1 << 20))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := policies.WriteTarball(&buf, policies.DefaultBundle(data), nil, policies.WriteOptions{Revision: "bench"}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkPull is a 1 MiB bundle from a registry on loopback (TLS,
// bearer tokens): resolve, download, verify the digest, read, compile.
// Target 300 ms, moonshot 150 ms (docs/performance.md).
func BenchmarkPull(b *testing.B) {
	bundle := megabyteBundle(b)
	r := testkit.StartRegistry(testkit.RegistryBearer, true)
	defer r.Close()
	creds := &Credentials{Username: testkit.RegistryUser, Password: testkit.RegistryPassword, CA: r.CAPEM()}
	f := NewFetcher(Options{})
	ctx := context.Background()
	if _, err := f.Push(ctx, r.URL("bench/grants:v1"), bundle, PushOptions{Credentials: creds}); err != nil {
		b.Fatal(err)
	}
	req := Request{URL: r.URL("bench/grants:v1"), Credentials: creds}
	b.Run("oci-1MiB", func(b *testing.B) {
		for b.Loop() {
			p, err := f.pull(ctx, "grants", req, nil)
			if err != nil || p.Unchanged {
				b.Fatal(err, p.Unchanged)
			}
		}
	})
	b.Run("oci-unchanged", func(b *testing.B) {
		first, err := f.Fetch(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		unchanged := req
		unchanged.Previous = first.Artifact
		sent := r.BlobBytes.Load()
		for b.Loop() {
			p, err := f.pull(ctx, "grants", unchanged, nil)
			if err != nil || !p.Unchanged {
				b.Fatal(err, p.Unchanged)
			}
		}
		b.ReportMetric(float64(r.BlobBytes.Load()-sent)/float64(b.N), "body-bytes/op")
	})
	b.Run("verify-only-1MiB", func(b *testing.B) {
		for b.Loop() {
			if _, err := Verify(ctx, "grants", bundle, nil, 0, policies.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
