package policies

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// DefaultMaxBundleBytes bounds a bundle's total decompressed size. OPA's
// own limit is per file (1 GiB by default), which lets a small gzip bomb of
// many files through; this one counts every byte the archive expands to.
const DefaultMaxBundleBytes = 32 << 20

// signingKeyID is the key id Gatehouse signs bundles with and verifies them
// against, OPA's default ("default", as `opa build --signing-key` writes).
const signingKeyID = "default"

// Errors ReadTarball wraps, so that callers can tell a person what failed.
var (
	// ErrTooLarge: the bundle expands to more than the limit.
	ErrTooLarge = errors.New("bundle too large")
	// ErrSignature: a verification key was given and the bundle is not
	// signed with it, or its files do not match the signature.
	ErrSignature = errors.New("bundle signature")
	// errInvalidBundle: anything else that makes the archive unusable.
	errInvalidBundle = errors.New("invalid bundle")
)

// TarballOptions tune ReadTarball.
type TarballOptions struct {
	// MaxBytes bounds the decompressed size (DefaultMaxBundleBytes when 0).
	MaxBytes int64
	// Key, when set, requires a valid .signatures.json signed with it.
	// Without it signatures are not checked.
	Key *VerificationKey
}

// VerificationKey is a public key in PEM (PUBLIC KEY, RSA PUBLIC KEY or a
// CERTIFICATE) and the signature algorithm; an empty algorithm is inferred
// from the key (RS256 for RSA, ES256/384/512 by ECDSA curve).
type VerificationKey struct {
	PEM       []byte
	Algorithm string
}

// Tarball is a bundle read from an OPA bundle archive.
type Tarball struct {
	// Bundle holds the modules (tests excluded), the data and the
	// Gatehouse manifest.
	Bundle Bundle
	// Tests are the *_test.rego modules: they run before a bundle is
	// accepted, and are never shipped to proxies.
	Tests []Module
	// Roots are the manifest's roots, nil when it declares none.
	Roots []string
	// SetsMetadata: the manifest sets one of Gatehouse's settings
	// (enforcing, entrypoint, cacheKeyIncludesPath).
	SetsMetadata bool
	// HasManifest: the archive holds a .manifest.
	HasManifest bool
	// Signed: the archive holds a .signatures.json (verified only when a
	// key was given).
	Signed bool
	// Bytes is the decompressed size of the files.
	Bytes int64
}

// ReadTarball reads an OPA bundle (.tar.gz with .rego files, data.json and
// data.yaml files, .manifest and .signatures.json) with OPA's own bundle
// reader, so a bundle `opa build` writes reads the same here. The whole
// archive is bounded first, in one decompression pass: OPA's reader only
// bounds each file.
func ReadTarball(raw []byte, o TarballOptions) (*Tarball, error) {
	limit := o.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBundleBytes
	}
	scan, err := scanTarball(raw, limit)
	if err != nil {
		return nil, err
	}
	if o.Key != nil && !scan.signed {
		return nil, fmt.Errorf("%w: the bundle is not signed (it has no .signatures.json) and a verification key is required: sign it (gatehouse policy build --signing-key, or opa build --signing-key)", ErrSignature)
	}
	b, err := readOPABundle(raw, limit, o.Key)
	if err != nil && o.Key != nil {
		// The same bytes read without verification tell a bad signature
		// from a bad bundle.
		if _, plainErr := readOPABundle(raw, limit, nil); plainErr == nil {
			return nil, fmt.Errorf("%w: %v", ErrSignature, err) //nolint:errorlint // OPA's message, one sentinel
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidBundle, err) //nolint:errorlint // as above
	}
	t, err := fromOPABundle(&b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidBundle, err) //nolint:errorlint // as above
	}
	t.Signed, t.Bytes, t.HasManifest = scan.signed, scan.bytes, scan.manifest
	return t, nil
}

type tarballScan struct {
	bytes    int64
	signed   bool
	manifest bool
}

// scanTarball walks the archive once, counting every decompressed byte
// against limit and refusing paths that could escape a directory.
func scanTarball(raw []byte, limit int64) (tarballScan, error) {
	var s tarballScan
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return s, fmt.Errorf("%w: not a gzip-compressed tar archive: %v", errInvalidBundle, err) //nolint:errorlint // as above
	}
	// The files' contents count against limit; tar's headers and padding
	// are allowed as much again (plus room for a long name), so the work a
	// bomb of empty files causes is bounded too.
	counted := &countingReader{r: zr, left: 2*limit + 1<<20}
	tr := tar.NewReader(counted)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if counted.left <= 0 {
			return s, tooLarge(limit)
		}
		if err != nil {
			return s, fmt.Errorf("%w: read the archive: %v", errInvalidBundle, err) //nolint:errorlint // as above
		}
		if h.Typeflag != tar.TypeReg {
			continue // OPA reads regular files only
		}
		name := strings.TrimPrefix(h.Name, "/")
		if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." || strings.Contains(name, `\`) {
			return s, fmt.Errorf("%w: file %q: want a plain relative path", errInvalidBundle, h.Name)
		}
		s.bytes += h.Size
		if h.Size < 0 || s.bytes > limit {
			return s, tooLarge(limit)
		}
		switch {
		case bundle.IsSignaturesFile(name):
			s.signed = true
		case name == ".manifest" || name == ".manifest.pb":
			s.manifest = true
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			if counted.left <= 0 {
				return s, tooLarge(limit)
			}
			return s, fmt.Errorf("%w: read %s: %v", errInvalidBundle, h.Name, err) //nolint:errorlint // as above
		}
	}
	// The gzip stream may go on past the tar's end (a bomb in trailing
	// data, a second member): drain it under the same bound.
	if _, err := io.Copy(io.Discard, counted); err != nil && counted.left > 0 {
		return s, fmt.Errorf("%w: read the archive: %v", errInvalidBundle, err) //nolint:errorlint // as above
	}
	if counted.left <= 0 {
		return s, tooLarge(limit)
	}
	return s, nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: it expands to more than %d bytes (%d MiB): split it, or raise the limit", ErrTooLarge, limit, limit>>20)
}

// countingReader stops after left bytes: left reaching 0 means the input
// was longer than allowed.
type countingReader struct {
	r    io.Reader
	left int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func readOPABundle(raw []byte, limit int64, key *VerificationKey) (bundle.Bundle, error) {
	loader := bundle.NewTarballLoaderWithBaseURL(bytes.NewReader(raw), "").WithSizeLimitBytes(limit)
	// OPA refuses a file of exactly the limit; ours is inclusive.
	r := bundle.NewCustomReader(loader).WithSizeLimitBytes(limit + 1).WithProcessAnnotations(true)
	if key == nil {
		r = r.WithSkipBundleVerification(true)
	} else {
		alg, err := key.algorithm()
		if err != nil {
			return bundle.Bundle{}, err
		}
		r = r.WithBundleVerificationConfig(bundle.NewVerificationConfig(
			map[string]*bundle.KeyConfig{signingKeyID: {Key: string(key.PEM), Algorithm: alg}}, signingKeyID, "", nil))
	}
	return r.Read()
}

// fromOPABundle keeps what Gatehouse evaluates: Rego modules and data.
func fromOPABundle(b *bundle.Bundle) (*Tarball, error) {
	switch {
	case len(b.WasmModules) > 0 || len(b.Wasm) > 0:
		return nil, errors.New("it holds Wasm modules; Gatehouse evaluates Rego: build the bundle without --target wasm")
	case len(b.PlanModules) > 0:
		return nil, errors.New("it holds plan modules; Gatehouse evaluates Rego: build the bundle without --target plan")
	case b.Type() == bundle.DeltaBundleType:
		return nil, errors.New("it is a delta bundle (patch.json); publish a whole (snapshot) bundle")
	}
	t := &Tarball{Bundle: Bundle{Data: b.Data}}
	if t.Bundle.Data == nil {
		t.Bundle.Data = map[string]any{}
	}
	for _, m := range b.Modules {
		p := strings.TrimPrefix(m.Path, "/")
		mod := Module{Path: p, Source: m.Raw}
		if strings.HasSuffix(p, "_test.rego") {
			t.Tests = append(t.Tests, mod)
		} else {
			t.Bundle.Modules = append(t.Bundle.Modules, mod)
		}
	}
	byPath := func(a, b Module) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(t.Bundle.Modules, byPath)
	slices.SortFunc(t.Tests, byPath)
	m := b.Manifest
	if len(m.FileRegoVersions) > 0 {
		return nil, errors.New(".manifest: file_rego_versions is not supported: give the whole bundle one rego_version")
	}
	t.Bundle.Manifest.Revision = m.Revision
	t.Bundle.Manifest.RegoVersion = m.RegoVersion
	if m.Roots != nil && !slices.Equal(*m.Roots, []string{""}) {
		t.Roots = slices.Clone(*m.Roots)
	}
	if len(m.Metadata) > 0 {
		raw, err := json.Marshal(m.Metadata)
		if err != nil {
			return nil, fmt.Errorf(".manifest metadata: %w", err)
		}
		if err := json.Unmarshal(raw, &t.Bundle.Manifest.Metadata); err != nil {
			return nil, fmt.Errorf(".manifest metadata: %w", err)
		}
		for _, k := range []string{"enforcing", "entrypoint", "cacheKeyIncludesPath"} {
			if _, ok := m.Metadata[k]; ok {
				t.SetsMetadata = true
			}
		}
	}
	return t, nil
}

// algorithm is the key's algorithm, or the one its type implies.
func (k *VerificationKey) algorithm() (string, error) {
	if k.Algorithm != "" {
		return k.Algorithm, nil
	}
	return KeyAlgorithm(k.PEM)
}

// KeyAlgorithm is the signature algorithm a PEM key (public, private or a
// certificate) implies: RS256 for RSA, ES256, ES384 or ES512 for ECDSA by
// curve. OPA's default is RS256, and it never guesses; Gatehouse guesses
// only where one answer is obvious.
func KeyAlgorithm(pemBytes []byte) (string, error) {
	key, err := parsePEMKey(pemBytes)
	if err != nil {
		return "", err
	}
	switch k := key.(type) {
	case *rsa.PublicKey, *rsa.PrivateKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		return ecdsaAlgorithm(k.Curve)
	case *ecdsa.PrivateKey:
		return ecdsaAlgorithm(k.Curve)
	}
	return "", fmt.Errorf("a %T key: give the algorithm explicitly (RS256, PS256, ES256, ...)", key)
}

// PublicKeyPEM is the PEM public key of a PEM private key, to verify what
// it signs.
func PublicKeyPEM(privatePEM []byte) ([]byte, error) {
	key, err := parsePEMKey(privatePEM)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign: give a private key", key)
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// parsePEMKey reads the first PEM block as a key, as OPA's verifier and
// signer do.
func parsePEMKey(pemBytes []byte) (any, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("the key is not PEM: want -----BEGIN PUBLIC KEY----- (or a certificate, or for signing a private key)")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = c.PublicKey
		}
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse the %s: %w", strings.ToLower(block.Type), err)
	}
	return key, nil
}

func ecdsaAlgorithm(c elliptic.Curve) (string, error) {
	switch c {
	case elliptic.P256():
		return "ES256", nil
	case elliptic.P384():
		return "ES384", nil
	case elliptic.P521():
		return "ES512", nil
	}
	return "", fmt.Errorf("ECDSA curve %s is not one JWS signs with", c.Params().Name)
}

// WriteOptions tune WriteTarball.
type WriteOptions struct {
	// Revision goes into the .manifest (the bundle's own when empty).
	Revision string
	// Roots go into the .manifest (none declared when nil).
	Roots []string
	// SigningKey, a PEM private key, signs the bundle (.signatures.json)
	// with SigningAlgorithm (inferred from the key when empty).
	SigningKey       []byte
	SigningAlgorithm string
}

// WriteTarball writes b and tests as an OPA bundle with OPA's writer: the
// modules byte for byte, data.json, the .manifest and, with a signing key,
// .signatures.json. The output depends only on the input: the same policy
// builds to the same bytes, and so to the same digest.
func WriteTarball(w io.Writer, b Bundle, tests []Module, o WriteOptions) error {
	ob := bundle.Bundle{Data: b.Data}
	if ob.Data == nil {
		ob.Data = map[string]any{}
	}
	mods := append(slices.Clone(b.Modules), tests...)
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	for _, m := range mods {
		p := "/" + strings.TrimPrefix(m.Path, "/")
		ob.Modules = append(ob.Modules, bundle.ModuleFile{URL: p, Path: p, Raw: m.Source})
	}
	meta, err := manifestMetadata(b.Manifest.Metadata)
	if err != nil {
		return err
	}
	rev := o.Revision
	if rev == "" {
		rev = b.Manifest.Revision
	}
	ob.Manifest = bundle.Manifest{Revision: rev, RegoVersion: b.Manifest.RegoVersion, Metadata: meta}
	if o.Roots != nil {
		roots := slices.Clone(o.Roots)
		ob.Manifest.Roots = &roots
	}
	if len(o.SigningKey) > 0 {
		alg := o.SigningAlgorithm
		if alg == "" {
			if alg, err = KeyAlgorithm(o.SigningKey); err != nil {
				return fmt.Errorf("signing key: %w", err)
			}
		}
		if err := ob.GenerateSignature(bundle.NewSigningConfig(string(o.SigningKey), alg, ""), signingKeyID, false); err != nil {
			return fmt.Errorf("sign the bundle: %w", err)
		}
	}
	if err := bundle.NewWriter(w).DisableFormat(true).Write(ob); err != nil {
		return fmt.Errorf("write the bundle: %w", err)
	}
	return nil
}

func manifestMetadata(m ManifestMetadata) (map[string]any, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
