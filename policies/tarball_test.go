package policies

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// tarGz packs files (path → content) in order, as any tar tool would.
func tarGz(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const grantsJSON = `{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`

func TestReadTarball(t *testing.T) {
	policy := string(DefaultPolicy())
	for _, tc := range []struct {
		name    string
		raw     []byte
		opts    TarballOptions
		wantErr error
		says    string
		check   func(t *testing.T, tb *Tarball)
	}{
		{
			name: "as opa build writes it",
			raw: tarGz(t, [2]string{"/data.json", grantsJSON}, [2]string{"/extensions/policy.rego", policy},
				[2]string{"/extensions/policy_test.rego", "package gatehouse.extensions_test\n\ntest_x if true\n"},
				[2]string{"/.manifest", `{"revision":"v3","roots":["gatehouse"],"metadata":{"enforcing":false}}`}),
			check: func(t *testing.T, tb *Tarball) {
				b := tb.Bundle
				if len(b.Modules) != 1 || b.Modules[0].Path != "extensions/policy.rego" || len(tb.Tests) != 1 {
					t.Errorf("modules %v tests %v: want the policy as a module and the test apart", paths(b.Modules), paths(tb.Tests))
				}
				if b.Manifest.Revision != "v3" || b.Manifest.IsEnforcing() || !tb.SetsMetadata || !tb.HasManifest {
					t.Errorf("manifest %+v: want revision v3, shadow mode", b.Manifest)
				}
				if len(tb.Roots) != 1 || tb.Roots[0] != "gatehouse" {
					t.Errorf("roots %v", tb.Roots)
				}
				if _, ok := b.Data["gatehouse"]; !ok {
					t.Errorf("data %v", b.Data)
				}
			},
		},
		{
			name: "data only, nested data.json at its directory",
			raw:  tarGz(t, [2]string{"gatehouse/data.json", `{"bindings": {"users": {"bob": ["role:x"]}}}`}),
			check: func(t *testing.T, tb *Tarball) {
				if len(tb.Bundle.Modules) != 0 || tb.Roots != nil || tb.HasManifest {
					t.Errorf("got %+v", tb)
				}
				g, _ := tb.Bundle.Data["gatehouse"].(map[string]any)
				if _, ok := g["bindings"]; !ok {
					t.Errorf("data %v: want data.gatehouse.bindings", tb.Bundle.Data)
				}
			},
		},
		{name: "not gzip", raw: []byte("PK\x03\x04 a zip"), wantErr: errInvalidBundle, says: "not a gzip-compressed tar archive"},
		{name: "data outside the roots", raw: tarGz(t, [2]string{"/data.json", `{"other": 1}`}, [2]string{"/.manifest", `{"roots":["gatehouse"]}`}),
			wantErr: errInvalidBundle, says: "manifest roots"},
		{name: "a path escaping", raw: tarGz(t, [2]string{"../../etc/x.rego", "package x"}), wantErr: errInvalidBundle, says: "plain relative path"},
		{name: "Rego that does not parse", raw: tarGz(t, [2]string{"p.rego", "package"}), wantErr: errInvalidBundle, says: "p.rego"},
		{name: "wasm", raw: tarGz(t, [2]string{"/policy.wasm", "\x00asm"}), wantErr: errInvalidBundle, says: "Wasm"},
		{name: "one file past the limit", raw: tarGz(t, [2]string{"/data.json", `{"a":"` + strings.Repeat("a", 2000) + `"}`}),
			opts: TarballOptions{MaxBytes: 1000}, wantErr: ErrTooLarge, says: "more than 1000 bytes"},
		{name: "many small files past the limit in total", raw: tarGz(t, manyFiles(30, 100)...),
			opts: TarballOptions{MaxBytes: 2000}, wantErr: ErrTooLarge},
		{name: "gzip bomb: 64 MiB of zeros in 64 KiB", raw: bomb(t), wantErr: ErrTooLarge},
		{name: "exactly the limit", raw: tarGz(t, [2]string{"a/data.json", `{"b":1}`}), opts: TarballOptions{MaxBytes: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := ReadTarball(tc.raw, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v, want %v saying %q", err, tc.wantErr, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, tb)
			}
		})
	}
}

func manyFiles(n, size int) [][2]string {
	var out [][2]string
	for i := range n {
		out = append(out, [2]string{"d" + strings.Repeat("x", i%5) + "/" + string(rune('a'+i%26)) + ".json", strings.Repeat(" ", size)})
	}
	return out
}

// bomb is a valid archive whose one data.json expands to 64 MiB: below
// OPA's per-file limit of 1 GiB, above the bundle limit.
func bomb(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	const size = 64 << 20
	if err := tw.WriteHeader(&tar.Header{Name: "/data.json", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range size / len(chunk) {
		if _, err := tw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	_ = zw.Close()
	if buf.Len() > 256<<10 {
		t.Fatalf("the bomb is %d bytes compressed", buf.Len())
	}
	return buf.Bytes()
}

func paths(ms []Module) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Path)
	}
	return out
}

func pemKeys(t *testing.T, rsaKey bool) (private, public []byte) {
	t.Helper()
	var priv, pub any
	if rsaKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub = k, &k.PublicKey
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub = k, &k.PublicKey
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}

func TestWriteTarballRoundTripAndSignatures(t *testing.T) {
	data, err := DecodeData([]byte(grantsJSON))
	if err != nil {
		t.Fatal(err)
	}
	b := DefaultBundle(data)
	tests := []Module{{Path: "extensions/grants_test.rego", Source: []byte("package gatehouse.extensions_test\n\ntest_ok if true\n")}}
	for _, rsaKey := range []bool{true, false} {
		priv, pub := pemKeys(t, rsaKey)
		_, otherPub := pemKeys(t, rsaKey)
		var signed, unsigned bytes.Buffer
		if err := WriteTarball(&signed, b, tests, WriteOptions{Revision: "r1", SigningKey: priv}); err != nil {
			t.Fatal(err)
		}
		if err := WriteTarball(&unsigned, b, tests, WriteOptions{Revision: "r1"}); err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		if err := WriteTarball(&again, b, tests, WriteOptions{Revision: "r1"}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), unsigned.Bytes()) {
			t.Error("the same bundle built twice gives different bytes")
		}

		tb, err := ReadTarball(signed.Bytes(), TarballOptions{Key: &VerificationKey{PEM: pub}})
		if err != nil {
			t.Fatalf("rsa=%v: signed bundle with its key: %v", rsaKey, err)
		}
		if !tb.Signed || tb.Bundle.Manifest.Revision != "r1" || len(tb.Tests) != 1 || tb.Bundle.Digest() != withRevision(b, "r1").Digest() {
			t.Errorf("round trip lost something: %+v", tb)
		}
		if _, err := Check(context.Background(), tb.Bundle); err != nil {
			t.Errorf("the round-tripped bundle does not compile: %v", err)
		}
		for name, tc := range map[string]struct {
			raw []byte
			key []byte
		}{
			"unsigned":    {unsigned.Bytes(), pub},
			"another key": {signed.Bytes(), otherPub},
			"tampered":    {tamper(t, signed.Bytes()), pub},
			"key not PEM": {signed.Bytes(), []byte("not a key")},
		} {
			if _, err := ReadTarball(tc.raw, TarballOptions{Key: &VerificationKey{PEM: tc.key}}); !errors.Is(err, ErrSignature) {
				t.Errorf("rsa=%v %s: got %v, want ErrSignature", rsaKey, name, err)
			}
		}
		// Without a key, signatures are not checked.
		if _, err := ReadTarball(tamper(t, signed.Bytes()), TarballOptions{}); err != nil {
			t.Errorf("rsa=%v: without a key a signed bundle reads: %v", rsaKey, err)
		}
	}
}

func withRevision(b Bundle, rev string) Bundle {
	b.Manifest.Revision = rev
	return b
}

// tamper rewrites data.json of an archive and keeps the signatures.
func tamper(t *testing.T, raw []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var files [][2]string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(tr)
		content := b.String()
		if h.Name == "/data.json" {
			content = `{"gatehouse": {"bindings": {"users": {"mallory": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "*"}]}}}}`
		}
		files = append(files, [2]string{h.Name, content})
	}
	return tarGz(t, files...)
}

// A bundle written by OPA's own writer, as `opa build` does, reads back.
func TestReadTarballOfOPAsWriter(t *testing.T) {
	var data map[string]any
	if err := json.Unmarshal([]byte(grantsJSON), &data); err != nil {
		t.Fatal(err)
	}
	roots := []string{"gatehouse"}
	var buf bytes.Buffer
	err := bundle.NewWriter(&buf).Write(bundle.Bundle{
		Manifest: bundle.Manifest{Revision: "opa-1", Roots: &roots},
		Data:     data,
		Modules:  []bundle.ModuleFile{{URL: "/gatehouse/extensions/policy.rego", Path: "/gatehouse/extensions/policy.rego", Raw: DefaultPolicy()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTarball(buf.Bytes(), TarballOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Bundle.Manifest.Revision != "opa-1" || len(tb.Bundle.Modules) != 1 || tb.Bundle.Modules[0].Path != "gatehouse/extensions/policy.rego" {
		t.Fatalf("got %+v", tb.Bundle)
	}
}

func TestKeyAlgorithm(t *testing.T) {
	rsaPriv, rsaPub := pemKeys(t, true)
	ecPriv, ecPub := pemKeys(t, false)
	for in, want := range map[string]string{string(rsaPriv): "RS256", string(rsaPub): "RS256", string(ecPriv): "ES256", string(ecPub): "ES256"} {
		if got, err := KeyAlgorithm([]byte(in)); err != nil || got != want {
			t.Errorf("got %q, %v; want %s", got, err, want)
		}
	}
	if _, err := KeyAlgorithm([]byte("-----BEGIN FOO-----\nAA==\n-----END FOO-----\n")); err == nil {
		t.Error("a FOO block is not a key")
	}
}
