package policies

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReadTarball feeds ReadTarball hostile archives: it must never panic,
// never accept one that expands past the limit, and fail only with its
// three errors.
func FuzzReadTarball(f *testing.F) {
	f.Add(tarGz(f, [2]string{"/data.json", `{"gatehouse": {}}`}, [2]string{"/.manifest", `{"revision": "1", "roots": ["gatehouse"]}`}))
	f.Add(tarGz(f, [2]string{"/p.rego", "package gatehouse.extensions\n\ndecision := {\"allow\": true, \"reason\": \"x\"}\n"}))
	f.Add(tarGz(f, [2]string{"../x.rego", "package x"}))
	f.Add([]byte("\x1f\x8b\x08\x00not really"))
	const limit = 4096
	f.Fuzz(func(t *testing.T, raw []byte) {
		tb, err := ReadTarball(raw, TarballOptions{MaxBytes: limit})
		if err != nil {
			if !errors.Is(err, errInvalidBundle) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrSignature) {
				t.Fatalf("an error of no kind: %v", err)
			}
			return
		}
		if tb.Bytes > limit {
			t.Fatalf("accepted %d bytes past the limit of %d", tb.Bytes, limit)
		}
		for _, m := range append(tb.Bundle.Modules, tb.Tests...) {
			if bytes.HasPrefix([]byte(m.Path), []byte("/")) || bytes.Contains([]byte(m.Path), []byte("..")) {
				t.Fatalf("module path %q escapes", m.Path)
			}
		}
	})
}
