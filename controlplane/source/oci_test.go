package source

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

func newTestFetcher() *Fetcher {
	return NewFetcher(Options{Attempts: 1})
}

func basicCreds(ca []byte) *Credentials {
	return &Credentials{Username: testUser, Password: testPassword, CA: ca}
}

// push publishes data at repoTag of r with Gatehouse's own Push.
func push(t *testing.T, r *testRegistry, repoTag string, data []byte) Pushed {
	t.Helper()
	var cred *Credentials
	if r.mode != anonymous {
		cred = basicCreds(nil)
	}
	p, err := newTestFetcher().Push(context.Background(), r.url(repoTag), data, PushOptions{Credentials: cred, InsecureSkipTLSVerify: true})
	if err != nil {
		t.Fatalf("push %s: %v", repoTag, err)
	}
	return p
}

func TestOCIFetch(t *testing.T) {
	bundle := testBundle(t, "v1")
	digestHex := func(p Pushed) string { return strings.TrimPrefix(p.LayerDigest, "sha256:") }
	type setup struct {
		mode   authMode
		tls    bool
		secret func(r *testRegistry) (typ string, data map[string][]byte) // nil: anonymous
	}
	dockerWithCA := func(r *testRegistry) (string, map[string][]byte) {
		d := dockerConfig(r.host, testUser, testPassword)
		d[keyCA] = r.caPEM()
		return gatehousev1.SecretTypeDockerConfigJSON, d
	}
	for _, tc := range []struct {
		name     string
		setup    setup
		tag      string // default "p:v1"
		insecure bool
		pin      func(p Pushed) string
		reason   string // "" for success
		says     string
	}{
		{name: "anonymous, plain HTTP on loopback", setup: setup{mode: anonymous}},
		{name: "anonymous, TLS with insecureSkipTLSVerify", setup: setup{mode: anonymous, tls: true}, insecure: true},
		{name: "anonymous, TLS from an unknown authority", setup: setup{mode: anonymous, tls: true}, reason: gatehousev1.ReasonFetchFailed,
			says: "put the CA in ca.crt"},
		{name: "basic auth, basic-auth Secret with ca.crt", setup: setup{mode: basicAuth, tls: true, secret: func(r *testRegistry) (string, map[string][]byte) {
			return gatehousev1.SecretTypeBasicAuth, map[string][]byte{keyUsername: []byte(testUser), keyPassword: []byte(testPassword), keyCA: r.caPEM()}
		}}},
		{name: "bearer tokens, dockerconfigjson with auth only", setup: setup{mode: bearerAuth, tls: true, secret: dockerWithCA}},
		{name: "bearer tokens over plain HTTP", setup: setup{mode: bearerAuth, secret: func(r *testRegistry) (string, map[string][]byte) {
			return gatehousev1.SecretTypeDockerConfigJSON, dockerConfig(r.host, testUser, testPassword)
		}}},
		{name: "basic auth, wrong password", setup: setup{mode: basicAuth, secret: func(r *testRegistry) (string, map[string][]byte) {
			return gatehousev1.SecretTypeDockerConfigJSON, dockerConfig(r.host, testUser, "wrong")
		}}, reason: gatehousev1.ReasonAuthenticationFailed, says: "check the credentials"},
		{name: "bearer tokens, wrong password", setup: setup{mode: bearerAuth, secret: func(r *testRegistry) (string, map[string][]byte) {
			return gatehousev1.SecretTypeDockerConfigJSON, dockerConfig(r.host, testUser, "wrong")
		}}, reason: gatehousev1.ReasonAuthenticationFailed},
		{name: "no Secret for a registry that wants one", setup: setup{mode: bearerAuth}, reason: gatehousev1.ReasonAuthenticationFailed,
			says: "name a Secret in spec.secretRef"},
		{name: "a tag that does not exist", setup: setup{mode: anonymous}, tag: "p:v9", reason: gatehousev1.ReasonNotFound, says: "check the repository and tag"},
		{name: "sha256 pins the layer", setup: setup{mode: anonymous}, pin: digestHex},
		{name: "sha256 mismatch", setup: setup{mode: anonymous}, pin: func(Pushed) string { return strings.Repeat("ab", 32) },
			reason: gatehousev1.ReasonChecksumMismatch, says: "spec.sha256 pins abab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, tc.setup.mode, tc.setup.tls)
			pushed := push(t, r, "p:v1", bundle)
			req := Request{URL: r.url("p:v1"), InsecureSkipTLSVerify: tc.insecure}
			if tc.tag != "" {
				req.URL = r.url(tc.tag)
			}
			if tc.pin != nil {
				req.SHA256 = tc.pin(pushed)
			}
			if tc.setup.secret != nil {
				typ, data := tc.setup.secret(r)
				c, err := secretCredentials("registry", typ, data, gatehousev1.SchemeOCI, r.host)
				if err != nil {
					t.Fatal(err)
				}
				req.Credentials = c
			}
			res, err := newTestFetcher().Fetch(context.Background(), req)
			if tc.reason != "" {
				if Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v (%s), want %s saying %q", err, Reason(err), tc.reason, tc.says)
				}
				if strings.Contains(err.Error(), testPassword) || strings.Contains(err.Error(), "wrong") {
					t.Errorf("the error shows a credential: %v", err)
				}
				if tc.reason == gatehousev1.ReasonChecksumMismatch && r.BlobGets.Load() != 0 {
					t.Errorf("a pinned mismatch downloaded %d blobs; the digest is known from the manifest", r.BlobGets.Load())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := res.Artifact
			if res.Unchanged || a == nil || !bytes.Equal(a.Data, bundle) || a.Digest != pushed.LayerDigest || a.ManifestDigest != pushed.ManifestDigest {
				t.Fatalf("got %+v, want the pushed bundle (%+v)", res, pushed)
			}
		})
	}
}

func TestOCIUnchangedIsNotDownloadedAgain(t *testing.T) {
	r := newTestRegistry(t, bearerAuth, true)
	push(t, r, "p:v1", testBundle(t, "v1"))
	f := newTestFetcher()
	req := Request{URL: r.url("p:v1"), Credentials: basicCreds(r.caPEM())}
	first, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	blobs, manifests := r.BlobGets.Load(), r.ManifestGets.Load()
	req.Previous = first.Artifact
	again, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || r.BlobGets.Load() != blobs || r.ManifestGets.Load() != manifests {
		t.Fatalf("unchanged tag: result %+v, blob GETs %d→%d, manifest GETs %d→%d; want only a HEAD", again, blobs, r.BlobGets.Load(), manifests, r.ManifestGets.Load())
	}
	// A new version under the same tag is downloaded.
	pushed := push(t, r, "p:v1", testBundle(t, "v2"))
	next, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if next.Unchanged || next.Artifact.Digest != pushed.LayerDigest {
		t.Fatalf("got %+v after a new push", next)
	}
}

func TestOCITooLargeIsNotDownloaded(t *testing.T) {
	r := newTestRegistry(t, anonymous, false)
	push(t, r, "p:v1", testBundle(t, "v1"))
	_, err := newTestFetcher().Fetch(context.Background(), Request{URL: r.url("p:v1"), MaxBytes: 10})
	if Reason(err) != gatehousev1.ReasonTooLarge || r.BlobGets.Load() != 0 {
		t.Fatalf("got %v with %d blob downloads; want TooLarge before downloading", err, r.BlobGets.Load())
	}
}

// pushManifest publishes a manifest of the given layers (media type,
// title, data) with oras directly, as other tools would.
func pushManifest(t *testing.T, r *testRegistry, repo, tag string, mediaType string, layers ...[3]string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	rp, err := remote.NewRepository(r.host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	rp.PlainHTTP = true
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: mediaType}
	m.Config = content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, []byte("{}"))
	if err := rp.Push(ctx, m.Config, bytes.NewReader([]byte("{}"))); err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d := content.NewDescriptorFromBytes(l[0], []byte(l[2]))
		if l[1] != "" {
			d.Annotations = map[string]string{ocispec.AnnotationTitle: l[1]}
		}
		if err := rp.Push(ctx, d, strings.NewReader(l[2])); err != nil {
			t.Fatal(err)
		}
		m.Layers = append(m.Layers, d)
	}
	raw, _ := json.Marshal(m)
	desc := content.NewDescriptorFromBytes(mediaType, raw)
	if err := rp.PushReference(ctx, desc, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
	return desc
}

func TestOCIBundleLayerSelection(t *testing.T) {
	r := newTestRegistry(t, anonymous, false)
	b := string(testBundle(t, "v1"))
	const tarLayer = "application/vnd.oci.image.layer.v1.tar"
	pushManifest(t, r, "p", "opa", ocispec.MediaTypeImageManifest, [3]string{"text/plain", "README", "hi"}, [3]string{mediaTypeBundleLayer, "", b})
	pushManifest(t, r, "p", "plain-targz", ocispec.MediaTypeImageManifest, [3]string{tarLayer, "policy.tar.gz", b})
	pushManifest(t, r, "p", "docker", "application/vnd.docker.distribution.manifest.v2+json", [3]string{mediaTypeBundleLayer, "", b})
	pushManifest(t, r, "p", "none", ocispec.MediaTypeImageManifest, [3]string{"text/plain", "README", "hi"})
	pushManifest(t, r, "p", "two", ocispec.MediaTypeImageManifest, [3]string{tarLayer, "a.tar.gz", b}, [3]string{tarLayer, "b.tgz", b})
	for tag, want := range map[string]string{"opa": "", "plain-targz": "", "docker": "", "none": "holds no bundle layer", "two": "holds 2 .tar.gz layers"} {
		res, err := newTestFetcher().Fetch(context.Background(), Request{URL: r.url("p:" + tag)})
		switch {
		case want == "" && (err != nil || string(res.Artifact.Data) != b):
			t.Errorf("%s: got %v, want the bundle", tag, err)
		case want != "" && (Reason(err) != gatehousev1.ReasonInvalidBundle || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want InvalidBundle saying %q", tag, err, want)
		}
	}
}

// Every oci:// URL Validate accepts, oras (which fetches it) parses the
// same way. Validate is stricter where Docker's reference grammar is (a
// host with "_", an empty port), so it refuses what Docker would.
func TestOCIReferenceAgreesWithOras(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, ref := range []string{
		"r.example/p:v1", "r.example:5000/a/b/c:1.2.3", "127.0.0.1:5000/p@" + digest, "r.example/p:v1@" + digest,
		"localhost/p:latest", "r.example/a__b/c-d.e:x_y", "[::1]:5000/p:v1",
		"r.example/P:v1", "r.example/p:-v1", "r.example/p@sha256:abc", "r.example/p/:v1", "r.example/p", "r.example/:v1",
		"r.example/a..b:v1", "r_x.example/p:v1", "r.example:/p:v1", "r.example/p:" + strings.Repeat("t", 129),
	} {
		ours, ourErr := gatehousev1.ParseOCIReference("oci://" + ref)
		theirs, theirErr := registry.ParseReference(ref)
		if theirErr == nil && theirs.Reference == "" {
			theirErr = errNoVersion // oras allows a bare repository; a PolicyBundle needs a version
		}
		if ourErr == nil && theirErr != nil {
			t.Errorf("%s: we accept it, oras does not: %v", ref, theirErr)
			continue
		}
		if ourErr == nil && (ours.Host != theirs.Registry || ours.Repository != theirs.Repository || ours.Reference() != theirs.Reference) {
			t.Errorf("%s: ours %+v, oras %+v", ref, ours, theirs)
		}
	}
}

var errNoVersion = &Error{Message: "no tag or digest"}
