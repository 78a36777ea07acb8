package policies

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// A revision longer than maxRevisionBytes is refused like any broken
// policy: the last good one keeps serving, the error blames the manifest,
// and neither the error nor the log line carries the revision whole.
func TestRevisionIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bytes  int
		loaded bool
	}{
		{"at the bound", maxRevisionBytes, true},
		{"one byte over", maxRevisionBytes + 1, false},
		{"20 MB", 20 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := exampleEngine(t, WithDecisionLog(slog.New(slog.NewJSONHandler(&logs, nil))))
			b := ExampleBundle()
			b.Manifest.Revision = strings.Repeat("r", tc.bytes)
			err := e.Load(context.Background(), b)
			if tc.loaded {
				if err != nil {
					t.Fatalf("a %d-byte revision is refused: %v", tc.bytes, err)
				}
				if e.Revision() != b.Manifest.Revision {
					t.Fatalf("the engine serves revision %q, want the one loaded", ShortRevision(e.Revision()))
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), "more than the 1024 allowed") {
					t.Fatalf("a %d-byte revision: err = %.300v, want it refused for its length", tc.bytes, err)
				}
				if got := FilesAtFault(err); !slices.Equal(got, []string{ManifestFile}) {
					t.Errorf("the error blames %v, want %s", got, ManifestFile)
				}
				if len(err.Error()) > 600 {
					t.Errorf("the error is %d bytes long: it carries the revision", len(err.Error()))
				}
				if e.Revision() != "builtin-example" {
					t.Fatalf("the engine serves %q after the refusal, want the last good policy", ShortRevision(e.Revision()))
				}
			}
			want := "extension policy loaded"
			if !tc.loaded {
				want = "extension policy refused"
			}
			if !strings.Contains(logs.String(), want) {
				t.Errorf("no %q line in the log:\n%.1000s", want, logs.String())
			}
			for line := range strings.Lines(logs.String()) {
				if len(line) > 600 {
					t.Errorf("a log line is %d bytes long: %.200s", len(line), line)
				}
			}
		})
	}
}

// The control plane's gate (ConfigMaps, PolicyBundles, gatehouse policy
// build) refuses it too, blaming the manifest.
func TestCheckSourceRefusesALongRevision(t *testing.T) {
	b := ExampleBundle()
	b.Manifest.Revision = strings.Repeat("r", maxRevisionBytes+1)
	_, err := checkSource(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "more than the 1024 allowed") {
		t.Fatalf("err = %.300v, want the revision refused for its length", err)
	}
	if got := FilesAtFault(err); !slices.Equal(got, []string{ManifestFile}) {
		t.Errorf("the error blames %v, want %s", got, ManifestFile)
	}
}

func TestShortRevision(t *testing.T) {
	long := strings.Repeat("a", 127) + "é" + strings.Repeat("b", 100) // é straddles byte 128
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"v3", "v3"},
		{strings.Repeat("x", 128), strings.Repeat("x", 128)},
		{strings.Repeat("x", 129), strings.Repeat("x", 128) + "…(129 bytes)"},
		{long, strings.Repeat("a", 127) + "…(229 bytes)"},
	} {
		if got := ShortRevision(tc.in); got != tc.want {
			t.Errorf("ShortRevision(%d bytes) = %q, want %q", len(tc.in), got, tc.want)
		}
	}
}
