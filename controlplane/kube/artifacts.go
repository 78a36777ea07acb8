package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// The elected replica keeps each PolicyBundle's last good artifact in
// ConfigMaps of Gatehouse's own namespace, and every replica builds the
// snapshot from them: so all replicas ship the same bytes, the bundle
// survives restarts and registry outages, and only the leader holds
// registry credentials. A head ConfigMap names the digest and the number of
// parts; the archive itself is split into parts named by its digest (a
// ConfigMap holds at most 1 MiB). A new version writes its parts first,
// then moves the head, then deletes the old parts, so a reader always finds
// a complete artifact behind the head it sees.
const (
	annotationBundle         = "gatehouse.io/policy-bundle"
	annotationDigest         = "gatehouse.io/digest"
	annotationParts          = "gatehouse.io/parts"
	annotationPart           = "gatehouse.io/part"
	annotationRevision       = "gatehouse.io/revision"
	annotationETag           = "gatehouse.io/etag"
	annotationManifestDigest = "gatehouse.io/manifest-digest"
	annotationURL            = "gatehouse.io/url"

	partKey = "part"
	// partBytes leaves room under the API server's 1 MiB for the rest of
	// the object.
	partBytes = 900 << 10
)

// headName is the head ConfigMap of a PolicyBundle: its name when that
// fits, else a prefix and a hash (parts add 17 characters to it).
func headName(bundle string) string {
	name := "gatehouse-pb-" + bundle
	if len(name) <= 236 {
		return name
	}
	sum := sha256.Sum256([]byte(bundle))
	return name[:227] + "-" + hex.EncodeToString(sum[:4])
}

func partName(bundle, digest string, i int) string {
	d := digest
	if len(d) > 7+12 {
		d = d[7 : 7+12] // past "sha256:"
	}
	return fmt.Sprintf("%s-%s-%d", headName(bundle), d, i)
}

// errIncomplete: the head names parts that are not (yet) all there, or
// that do not add up to its digest.
var errIncomplete = errors.New("artifact incomplete")

// readArtifact assembles a PolicyBundle's artifact; nil when it has none.
func readArtifact(ctx context.Context, r client.Reader, ns, bundle string) (*controlplane.BundleArtifact, error) {
	var head corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: headName(bundle)}, &head)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := head.Annotations
	n, err := strconv.Atoi(a[annotationParts])
	if err != nil || n < 1 || n > 1024 || a[annotationBundle] != bundle {
		return nil, fmt.Errorf("%w: head %s/%s is malformed", errIncomplete, ns, head.Name)
	}
	digest := a[annotationDigest]
	h := sha256.New()
	var data []byte
	for i := range n {
		var part corev1.ConfigMap
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: partName(bundle, digest, i)}, &part); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: part %d of %d is missing", errIncomplete, i+1, n)
			}
			return nil, err
		}
		if part.Annotations[annotationDigest] != digest {
			return nil, fmt.Errorf("%w: part %d belongs to another version", errIncomplete, i+1)
		}
		b := part.BinaryData[partKey]
		h.Write(b)
		data = append(data, b...)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return nil, fmt.Errorf("%w: its parts hash to %s, not %s", errIncomplete, got, digest)
	}
	return &controlplane.BundleArtifact{Data: data, Digest: digest, ETag: a[annotationETag], ManifestDigest: a[annotationManifestDigest], Revision: a[annotationRevision]}, nil
}

// writeArtifact stores a as bundle's artifact: parts, then the head, then
// the old parts go.
func writeArtifact(ctx context.Context, c client.Client, ns, bundle, url string, a *controlplane.BundleArtifact) error {
	n := (len(a.Data) + partBytes - 1) / partBytes
	n = max(n, 1)
	for i := range n {
		chunk := a.Data[min(i*partBytes, len(a.Data)):min((i+1)*partBytes, len(a.Data))]
		part := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: partName(bundle, a.Digest, i), Namespace: ns,
				Labels:      map[string]string{gatehousev1.LabelArtifact: "part"},
				Annotations: map[string]string{annotationBundle: bundle, annotationDigest: a.Digest, annotationPart: strconv.Itoa(i)}},
			BinaryData: map[string][]byte{partKey: chunk},
			Immutable:  new(true),
		}
		if err := c.Create(ctx, part); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("store part %d of the bundle: %w", i+1, err)
		}
	}
	head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: headName(bundle), Namespace: ns}}
	annotations := map[string]string{
		annotationBundle: bundle, annotationDigest: a.Digest, annotationParts: strconv.Itoa(n),
		annotationRevision: a.Revision, annotationETag: a.ETag, annotationManifestDigest: a.ManifestDigest, annotationURL: url,
	}
	err := c.Get(ctx, client.ObjectKeyFromObject(head), head)
	switch {
	case apierrors.IsNotFound(err):
		head.Labels = map[string]string{gatehousev1.LabelArtifact: "head"}
		head.Annotations = annotations
		if err := c.Create(ctx, head); err != nil {
			return fmt.Errorf("store the bundle's head: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read the bundle's head: %w", err)
	default:
		head.Labels = map[string]string{gatehousev1.LabelArtifact: "head"}
		head.Annotations = annotations
		if err := c.Update(ctx, head); err != nil {
			return fmt.Errorf("store the bundle's head: %w", err)
		}
	}
	return deleteParts(ctx, c, ns, bundle, a.Digest)
}

// deleteParts deletes bundle's parts of every digest but keep ("" for all).
func deleteParts(ctx context.Context, c client.Client, ns, bundle, keep string) error {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{gatehousev1.LabelArtifact: "part"}); err != nil {
		return fmt.Errorf("list the bundle's parts: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Annotations[annotationBundle] != bundle || (keep != "" && p.Annotations[annotationDigest] == keep) {
			continue
		}
		if err := c.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete an old part of the bundle: %w", err)
		}
	}
	return nil
}

// deleteArtifact removes a PolicyBundle's head and parts.
func deleteArtifact(ctx context.Context, c client.Client, ns, bundle string) error {
	head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: headName(bundle), Namespace: ns}}
	if err := c.Delete(ctx, head); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the bundle's head: %w", err)
	}
	return deleteParts(ctx, c, ns, bundle, "")
}
