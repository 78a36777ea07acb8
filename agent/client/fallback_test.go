package client

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// sentCommands is a CommandChannel that records what the agent sends.
type sentCommands struct {
	grpc.ClientStream
	mu   sync.Mutex
	sent []*agentv1.Command
}

func (s *sentCommands) Send(c *agentv1.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, c)
	return nil
}
func (s *sentCommands) Recv() (*agentv1.Command, error) { select {} }
func (s *sentCommands) Header() (metadata.MD, error)    { return nil, nil }
func (s *sentCommands) Trailer() metadata.MD            { return nil }
func (s *sentCommands) CloseSend() error                { return nil }
func (s *sentCommands) Context() context.Context        { return context.Background() }

// An agent that cannot apply a delta exactly as announced asks for the full
// manifest, and neither touches the volume nor reports the version.
func TestDeltaItCannotApplyAsksForTheManifest(t *testing.T) {
	v1 := []*agentv1.FileMeta{meta("apps/a.json", "a"), meta("apps/b.json", "b")}
	v2 := []*agentv1.FileMeta{meta("apps/a.json", "a2"), meta("apps/b.json", "b")}
	delta := func(base string, changed []*agentv1.FileMeta, removed ...string) *agentv1.ConfigAvailable {
		return &agentv1.ConfigAvailable{Version: versionOf(t, v2), BaseVersion: base, Changed: changed, Removed: removed}
	}
	tests := []struct {
		name        string
		announce    func(base string) *agentv1.ConfigAvailable
		wantRequest bool
	}{
		{name: "delta from the version on the volume", announce: func(base string) *agentv1.ConfigAvailable {
			return delta(base, v2[:1])
		}},
		{name: "base not on the volume", wantRequest: true, announce: func(string) *agentv1.ConfigAvailable {
			return delta(versionOf(t, []*agentv1.FileMeta{meta("x", "x")}), v2[:1])
		}},
		{name: "result is not the announced version", wantRequest: true, announce: func(base string) *agentv1.ConfigAvailable {
			return delta(base, []*agentv1.FileMeta{meta("apps/a.json", "something else")})
		}},
		{name: "removes a path the base lacks", wantRequest: true, announce: func(base string) *agentv1.ConfigAvailable {
			return delta(base, v2[:1], "apps/zzz.json")
		}},
		{name: "base version name is a path", wantRequest: true, announce: func(string) *agentv1.ConfigAvailable {
			return delta("../../etc", v2[:1])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := sidecar.NewWriter(t.TempDir(), sidecar.DefaultLimits(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Wait) // a Commit's clean-up runs on after it returns
			m, _, err := toManifest(&agentv1.ConfigAvailable{Version: versionOf(t, v1), Manifest: &agentv1.Manifest{Files: v1}}, sidecar.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			content := map[string][]byte{sha("a"): []byte("a"), sha("b"): []byte("b")}
			if err := w.Write(m, func(s string) ([]byte, error) { return content[s], nil }); err != nil {
				t.Fatal(err)
			}
			a, err := New(Options{Address: "x:1", CAFile: "ca", TokenFile: "token", Writer: w})
			if err != nil {
				t.Fatal(err)
			}
			an := &announcement{id: "m-1", config: tt.announce(m.Version)}
			if !tt.wantRequest {
				got, _, err := a.manifestOf(an.config)
				if err != nil || got.Version != versionOf(t, v2) || got.Files[0].SHA256 != sha("a2") {
					t.Fatalf("manifestOf = %v, %v; want v2 with apps/a.json changed", got, err)
				}
				return
			}
			cc := &sentCommands{}
			a.handle(context.Background(), nil, &stream_{stream: cc}, an)
			if len(cc.sent) != 1 || cc.sent[0].GetManifestRequest().GetVersion() != an.config.GetVersion() ||
				cc.sent[0].GetMetadata().GetCorrelationId() != "m-1" {
				t.Fatalf("sent %v; want one ManifestRequest for %s answering m-1", cc.sent, an.config.GetVersion())
			}
			if cur, _ := w.Current(); cur.Version != m.Version {
				t.Fatalf("volume serves %s, want %s untouched", cur.Version, m.Version)
			}
		})
	}
}

// A delta entry no agent could take (a kind this release does not know, a
// path that leaves the volume) is the version's fault, whatever the base:
// the agent refuses the version and names the entry, as it would in the
// full manifest, without asking for it.
func TestDeltaWithABadEntryIsRejected(t *testing.T) {
	for name, bad := range map[string]*agentv1.FileMeta{
		"unknown kind":  {Path: "apps/c.json", Sha256: sha("c"), Size: 1, Mode: 0o644, Kind: 42},
		"path escapes":  {Path: "../c.json", Sha256: sha("c"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG},
		"reserved name": {Path: sidecar.ManifestFile, Sha256: sha("c"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG},
	} {
		t.Run(name, func(t *testing.T) {
			w, err := sidecar.NewWriter(t.TempDir(), sidecar.DefaultLimits(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Wait) // a Commit's clean-up runs on after it returns
			a, err := New(Options{Address: "x:1", CAFile: "ca", TokenFile: "token", Writer: w})
			if err != nil {
				t.Fatal(err)
			}
			an := &announcement{id: "m-1", config: &agentv1.ConfigAvailable{Version: "v2", BaseVersion: "v1", Changed: []*agentv1.FileMeta{bad}}}
			cc := &sentCommands{}
			a.handle(context.Background(), nil, &stream_{stream: cc}, an)
			if len(cc.sent) != 1 {
				t.Fatalf("sent %v; want one ConfigStatus", cc.sent)
			}
			st := cc.sent[0].GetConfigStatus()
			if st.GetState() != agentv1.ConfigState_CONFIG_STATE_REJECTED || st.GetRejectionClass() != agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC ||
				len(st.GetFileErrors()) != 1 || st.GetFileErrors()[0].GetPath() != bad.GetPath() {
				t.Fatalf("status %v; want a deterministic rejection naming %q", st, bad.GetPath())
			}
		})
	}
}
