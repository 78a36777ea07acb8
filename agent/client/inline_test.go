package client

import (
	"slices"
	"strings"
	"testing"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

func TestInlinedRefusesMisshapenContent(t *testing.T) {
	changed := []*agentv1.FileMeta{{Path: "a", Sha256: sha("A")}, {Path: "b", Sha256: sha("B")}}
	tests := []struct {
		name    string
		ca      *agentv1.ConfigAvailable
		want    map[string]string
		wantErr string
	}{
		{name: "none", ca: &agentv1.ConfigAvailable{Version: "v2", BaseVersion: "v1", Changed: changed}},
		{name: "one per changed entry", ca: &agentv1.ConfigAvailable{Version: "v2", BaseVersion: "v1", Changed: changed,
			Content: [][]byte{[]byte("A"), []byte("B")}}, want: map[string]string{sha("A"): "A", sha("B"): "B"}},
		{name: "fewer than the changed entries", ca: &agentv1.ConfigAvailable{Version: "v2", BaseVersion: "v1", Changed: changed,
			Content: [][]byte{[]byte("A")}}, wantErr: "1 contents for 2 changed files"},
		{name: "in a full announcement", ca: &agentv1.ConfigAvailable{Version: "v2", Manifest: &agentv1.Manifest{Files: changed},
			Content: [][]byte{[]byte("A"), []byte("B")}}, wantErr: "without a delta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inlined(tt.ca)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
			for k, v := range tt.want {
				if string(got[k]) != v {
					t.Errorf("content of %s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestWriteInline(t *testing.T) {
	t.Run("writes what came and leaves the rest", func(t *testing.T) {
		st, missing := newStage(t, "one", "two", "three")
		rest, n, err := writeInline(st, missing, map[string][]byte{sha("one"): []byte("one"), sha("three"): []byte("three")})
		if err != nil || n != 8 || !slices.Equal(rest, []int{1}) {
			t.Fatalf("rest %v, %d bytes, %v; want [1], 8 bytes", rest, n, err)
		}
	})
	t.Run("content of another size is left for the download", func(t *testing.T) {
		st, missing := newStage(t, "one")
		rest, _, err := writeInline(st, missing, map[string][]byte{sha("one"): []byte("one plus")})
		if err != nil || !slices.Equal(rest, missing) {
			t.Fatalf("rest %v, %v; want %v", rest, err, missing)
		}
	})
	t.Run("content that does not hash to the manifest's fails", func(t *testing.T) {
		st, missing := newStage(t, "one")
		_, _, err := writeInline(st, missing, map[string][]byte{sha("one"): []byte("two")})
		if err == nil || !strings.Contains(err.Error(), "sent with the announcement") {
			t.Fatalf("error %v, want a hash mismatch of the announced content", err)
		}
	})
}
