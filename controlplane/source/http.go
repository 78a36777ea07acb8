package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strings"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// fetchHTTP GETs the artifact, conditionally on the previous one's ETag,
// hashing it as it streams in and stopping at the size limit.
func (f *Fetcher) fetchHTTP(ctx context.Context, req Request) (Result, error) {
	c, err := f.client(req)
	if err != nil {
		return Result{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return Result{}, errorf(gatehousev1.ReasonInvalidSpec, "spec.url: %v", err)
	}
	hr.Header.Set("User-Agent", f.o.UserAgent)
	hr.Header.Set("Accept", "application/gzip, application/x-gzip, application/vnd.openpolicyagent.bundle, */*;q=0.5")
	if cr := req.Credentials; cr != nil {
		switch {
		case cr.Authorization != "":
			hr.Header.Set("Authorization", cr.Authorization)
		case cr.Username != "" || cr.Password != "":
			hr.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cr.Username+":"+cr.Password)))
		}
	}
	if p := req.Previous; p != nil && p.ETag != "" && (req.SHA256 == "" || p.Digest == "sha256:"+req.SHA256) {
		hr.Header.Set("If-None-Match", p.ETag)
	}
	resp, err := c.Do(hr)
	if err != nil {
		return Result{}, networkError("GET "+req.URL, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && req.Previous != nil:
		return Result{Unchanged: true}, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "check the credentials in the Secret spec.secretRef names"
		if req.Credentials == nil || (req.Credentials.Authorization == "" && req.Credentials.Username == "" && req.Credentials.Password == "") {
			hint = "the server wants credentials: name a Secret in spec.secretRef"
		}
		return Result{}, errorf(gatehousev1.ReasonAuthenticationFailed, "GET %s: %s: %s", req.URL, resp.Status, hint)
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return Result{}, errorf(gatehousev1.ReasonNotFound, "GET %s: %s: check spec.url", req.URL, resp.Status)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return Result{}, transient("GET %s: %s", req.URL, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return Result{}, errorf(gatehousev1.ReasonFetchFailed, "GET %s: %s", req.URL, resp.Status)
	}
	if resp.ContentLength > req.MaxBytes {
		return Result{}, tooLarge(req.URL, resp.ContentLength, req.MaxBytes)
	}
	data, digest, err := readVerified(resp.Body, req.MaxBytes)
	if err != nil {
		if _, big := err.(errTooLarge); big { //nolint:errorlint // readVerified's own value
			return Result{}, tooLarge(req.URL, -1, req.MaxBytes)
		}
		return Result{}, transient("GET %s: read the body: %v", req.URL, err)
	}
	if err := checkPin(req.SHA256, digest); err != nil {
		return Result{}, err
	}
	a := &Artifact{Data: data, Digest: digest, ETag: resp.Header.Get("ETag")}
	if p := req.Previous; p != nil && p.Digest == a.Digest {
		// Same bytes (a server without ETags): nothing changes.
		return Result{Unchanged: true}, nil
	}
	return Result{Artifact: a}, nil
}

type errTooLarge struct{}

func (errTooLarge) Error() string { return "too large" }

// readVerified reads at most limit bytes and hashes them as they come.
func readVerified(r io.Reader, limit int64) ([]byte, string, error) {
	h := sha256.New()
	var buf bytes.Buffer
	n, err := io.Copy(io.MultiWriter(h, &buf), io.LimitReader(r, limit+1))
	if err != nil {
		return nil, "", err
	}
	if n > limit {
		return nil, "", errTooLarge{}
	}
	return buf.Bytes(), "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func tooLarge(what string, size, limit int64) *Error {
	if size > 0 {
		return errorf(gatehousev1.ReasonTooLarge, "%s is %d bytes, more than the %d bytes a bundle may have: split it, or raise the limit", what, size, limit)
	}
	return errorf(gatehousev1.ReasonTooLarge, "%s is more than the %d bytes a bundle may have: split it, or raise the limit", what, limit)
}

// checkPin compares the artifact's digest with spec.sha256.
func checkPin(pin, digest string) error {
	if pin == "" || digest == "sha256:"+pin {
		return nil
	}
	return errorf(gatehousev1.ReasonChecksumMismatch, "the artifact's SHA-256 is %s, but spec.sha256 pins %s: if the new artifact is the one you published, update spec.sha256",
		strings.TrimPrefix(digest, "sha256:"), pin)
}
