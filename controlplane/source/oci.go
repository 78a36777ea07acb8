package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// Media types of an OPA bundle in a registry, as OPA pulls it (and
// `opa`'s documentation pushes it with oras): an image manifest whose
// config is an image config and whose layer is the bundle's .tar.gz.
const (
	mediaTypeBundleLayer  = ocispec.MediaTypeImageLayerGzip
	mediaTypeBundleConfig = ocispec.MediaTypeImageConfig
)

// layerTitle names the layer in the registry, as `oras push` does.
const layerTitle = "bundle.tar.gz"

// repository returns the remote repository of an oci:// URL, with the
// request's credentials for its registry only.
func (f *Fetcher) repository(req Request, plainHTTP bool) (*remote.Repository, gatehousev1.OCIReference, error) {
	ref, err := gatehousev1.ParseOCIReference(req.URL)
	if err != nil {
		return nil, ref, errorf(gatehousev1.ReasonInvalidSpec, "spec.url: %v", err)
	}
	repo, err := remote.NewRepository(ref.Host + "/" + ref.Repository)
	if err != nil {
		return nil, ref, errorf(gatehousev1.ReasonInvalidSpec, "spec.url: %v", err)
	}
	hc, err := f.client(req)
	if err != nil {
		return nil, ref, err
	}
	client := &auth.Client{Client: hc, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {f.o.UserAgent}}}
	if c := req.Credentials; !c.anonymous() {
		client.Credential = auth.StaticCredential(ref.Host, auth.Credential{
			Username: c.Username, Password: c.Password, RefreshToken: c.IdentityToken, AccessToken: c.RegistryToken,
		})
	}
	repo.Client = client
	repo.PlainHTTP = plainHTTP
	return repo, ref, nil
}

// withRepository runs do against the registry over HTTPS. A registry on a
// loopback address that answers HTTPS with plain HTTP is used over plain
// HTTP, as Docker treats 127.0.0.0/8 as an insecure registry; anywhere
// else a registry must speak TLS.
func (f *Fetcher) withRepository(req Request, do func(*remote.Repository, gatehousev1.OCIReference) error) error {
	ref, err := gatehousev1.ParseOCIReference(req.URL)
	if err != nil {
		return errorf(gatehousev1.ReasonInvalidSpec, "spec.url: %v", err)
	}
	f.mu.Lock()
	plain := f.plain[ref.Host]
	f.mu.Unlock()
	repo, ref, err := f.repository(req, plain)
	if err != nil {
		return err
	}
	err = do(repo, ref)
	if plain || !errors.Is(err, http.ErrSchemeMismatch) || !loopback(ref.Host) {
		return err
	}
	f.mu.Lock()
	f.plain[ref.Host] = true
	f.mu.Unlock()
	if repo, ref, err = f.repository(req, true); err != nil {
		return err
	}
	return do(repo, ref)
}

func loopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// fetchOCI resolves the tag, and unless the manifest is the one serving
// already, downloads the bundle layer, verifying its digest as it streams.
func (f *Fetcher) fetchOCI(ctx context.Context, req Request) (Result, error) {
	var res Result
	err := f.withRepository(req, func(repo *remote.Repository, ref gatehousev1.OCIReference) error {
		var err error
		res, err = f.pullLayer(ctx, repo, ref, req)
		return err
	})
	return res, err
}

func (f *Fetcher) pullLayer(ctx context.Context, repo *remote.Repository, ref gatehousev1.OCIReference, req Request) (Result, error) {
	where := "oci://" + ref.String()
	desc, err := repo.Resolve(ctx, ref.Reference())
	if err != nil {
		return Result{}, ociError(where, "resolve "+ref.Reference(), err, req.Credentials)
	}
	prev, pin := req.Previous, req.SHA256
	if prev != nil && prev.ManifestDigest == desc.Digest.String() && (pin == "" || prev.Digest == "sha256:"+pin) {
		return Result{Unchanged: true}, nil
	}
	manifest, err := fetchManifest(ctx, repo, desc, 0)
	if err != nil {
		return Result{}, ociError(where, "read the manifest", err, req.Credentials)
	}
	layer, err := bundleLayer(where, manifest)
	if err != nil {
		return Result{}, err
	}
	if layer.Size > req.MaxBytes {
		return Result{}, tooLarge(where+"'s bundle layer", layer.Size, req.MaxBytes)
	}
	if err := checkPin(pin, layer.Digest.String()); err != nil {
		return Result{}, err
	}
	if prev != nil && prev.Digest == layer.Digest.String() {
		// A new manifest around the same layer: nothing to download.
		return Result{Artifact: &Artifact{Data: prev.Data, Digest: prev.Digest, ManifestDigest: desc.Digest.String()}}, nil
	}
	rc, err := repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return Result{}, ociError(where, "download the bundle layer", err, req.Credentials)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, layer)
	switch {
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData), errors.Is(err, content.ErrInvalidDescriptorSize):
		return Result{}, errorf(gatehousev1.ReasonChecksumMismatch, "%s: the registry sent a bundle layer that does not match its digest %s (%v)", where, layer.Digest, err)
	case err != nil:
		return Result{}, networkError(where+": download the bundle layer", err)
	}
	return Result{Artifact: &Artifact{Data: data, Digest: layer.Digest.String(), ManifestDigest: desc.Digest.String()}}, nil
}

// fetchManifest reads an image manifest; from an index, the first
// manifest with a bundle layer (attestations under the "unknown" platform
// skipped), as OPA does.
func fetchManifest(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, depth int) (*ocispec.Manifest, error) {
	raw, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex, "application/vnd.docker.distribution.manifest.list.v2+json":
		if depth >= 2 {
			return nil, errors.New("image indexes nested too deep")
		}
		var idx ocispec.Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, fmt.Errorf("decode the image index: %w", err)
		}
		for _, m := range idx.Manifests {
			if p := m.Platform; p != nil && p.OS == "unknown" && p.Architecture == "unknown" {
				continue
			}
			child, err := fetchManifest(ctx, repo, m, depth+1)
			if err != nil {
				return nil, err
			}
			if _, ok := opaLayer(child); ok {
				return child, nil
			}
		}
		return nil, fmt.Errorf("no manifest in the image index holds a %s layer", mediaTypeBundleLayer)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode the manifest: %w", err)
	}
	return &m, nil
}

func opaLayer(m *ocispec.Manifest) (ocispec.Descriptor, bool) {
	for _, l := range m.Layers {
		if l.MediaType == mediaTypeBundleLayer {
			return l, true
		}
	}
	return ocispec.Descriptor{}, false
}

// bundleLayer picks the bundle: the first layer of OPA's media type, else
// the one layer that is a .tar.gz by media type or file name.
func bundleLayer(where string, m *ocispec.Manifest) (ocispec.Descriptor, error) {
	if l, ok := opaLayer(m); ok {
		return l, nil
	}
	var found []ocispec.Descriptor
	for _, l := range m.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		switch {
		case l.MediaType == "application/gzip", l.MediaType == "application/x-gzip", l.MediaType == "application/tar+gzip",
			strings.HasSuffix(title, ".tar.gz"), strings.HasSuffix(title, ".tgz"):
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var types []string
		for _, l := range m.Layers {
			types = append(types, l.MediaType)
		}
		return ocispec.Descriptor{}, errorf(gatehousev1.ReasonInvalidBundle, "%s holds no bundle layer (media type %s, or a .tar.gz file); its layers are [%s]",
			where, mediaTypeBundleLayer, strings.Join(types, ", "))
	}
	return ocispec.Descriptor{}, errorf(gatehousev1.ReasonInvalidBundle, "%s holds %d .tar.gz layers and none of media type %s: push the bundle alone, or with that media type",
		where, len(found), mediaTypeBundleLayer)
}

// ociError maps a registry's answer to a reason.
func ociError(where, doing string, err error, cred *Credentials) *Error {
	var resp *errcode.ErrorResponse
	hint := "check the credentials in the Secret spec.secretRef names"
	switch {
	case cred == nil:
		hint = "the registry wants credentials: name a Secret in spec.secretRef"
	case cred.AnonymousBecause != "":
		hint = "the registry wants credentials, and " + cred.AnonymousBecause + ": " + cred.addEntry
	}
	switch {
	case errors.As(err, &resp):
		switch code := resp.StatusCode; {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return errorf(gatehousev1.ReasonAuthenticationFailed, "%s: %s: %d %s: %s", where, doing, code, http.StatusText(code), hint)
		case code == http.StatusNotFound:
			return errorf(gatehousev1.ReasonNotFound, "%s: %s: not found: check the repository and tag in spec.url", where, doing)
		case code == http.StatusTooManyRequests || code >= 500:
			return transient("%s: %s: %d %s", where, doing, code, http.StatusText(code))
		}
		return errorf(gatehousev1.ReasonFetchFailed, "%s: %s: %v", where, doing, err)
	case errors.Is(err, errdef.ErrNotFound):
		return errorf(gatehousev1.ReasonNotFound, "%s: %s: not found: check the repository and tag in spec.url", where, doing)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return errorf(gatehousev1.ReasonAuthenticationFailed, "%s: %s: %s", where, doing, hint)
	}
	return networkError(where+": "+doing, err)
}

// PushOptions configure Push.
type PushOptions struct {
	Credentials           *Credentials
	InsecureSkipTLSVerify bool
	// Annotations go on the manifest (org.opencontainers.image.* and the
	// like).
	Annotations map[string]string
}

// Pushed is what Push published.
type Pushed struct {
	// LayerDigest is sha256:<hex> of the bundle: its hex is what
	// spec.sha256 pins.
	LayerDigest string
	// ManifestDigest pins the whole artifact in a URL (@sha256:...).
	ManifestDigest string
}

// Push publishes a bundle archive at an oci:// URL with a tag, with OPA's
// media types, so that OPA pulls it too. The manifest holds nothing but the
// bundle (no creation time), so the same bundle pushed twice has the same
// manifest digest.
func (f *Fetcher) Push(ctx context.Context, url string, bundle []byte, o PushOptions) (Pushed, error) {
	req := Request{URL: url, Credentials: o.Credentials, InsecureSkipTLSVerify: o.InsecureSkipTLSVerify}
	var out Pushed
	err := f.withRepository(req, func(repo *remote.Repository, ref gatehousev1.OCIReference) error {
		if ref.Tag == "" || ref.Digest != "" {
			return errorf(gatehousev1.ReasonInvalidSpec, "%s: push to a tag (oci://HOST/REPOSITORY:TAG), not a digest", url)
		}
		where := "oci://" + ref.String()
		config := []byte("{}")
		configDesc := content.NewDescriptorFromBytes(mediaTypeBundleConfig, config)
		layerDesc := content.NewDescriptorFromBytes(mediaTypeBundleLayer, bundle)
		layerDesc.Annotations = map[string]string{ocispec.AnnotationTitle: layerTitle}
		for _, b := range []struct {
			desc ocispec.Descriptor
			data []byte
		}{{configDesc, config}, {layerDesc, bundle}} {
			if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
				return ociError(where, "push a blob", err, o.Credentials)
			}
		}
		manifest := ocispec.Manifest{
			Versioned:   specs.Versioned{SchemaVersion: 2},
			MediaType:   ocispec.MediaTypeImageManifest,
			Config:      configDesc,
			Layers:      []ocispec.Descriptor{layerDesc},
			Annotations: o.Annotations,
		}
		raw, err := json.Marshal(manifest)
		if err != nil {
			return fmt.Errorf("encode the manifest: %w", err)
		}
		mdesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
		if err := repo.PushReference(ctx, mdesc, bytes.NewReader(raw), ref.Tag); err != nil {
			return ociError(where, "push the manifest", err, o.Credentials)
		}
		out = Pushed{LayerDigest: layerDesc.Digest.String(), ManifestDigest: mdesc.Digest.String()}
		return nil
	})
	return out, err
}

func pushBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte) error {
	ok, err := repo.Blobs().Exists(ctx, desc)
	if err != nil || ok {
		return err
	}
	err = repo.Blobs().Push(ctx, desc, bytes.NewReader(data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}
