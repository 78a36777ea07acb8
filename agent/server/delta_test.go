package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// decodeAnnouncement sends ca through the wire, as an agent receives it.
func decodeAnnouncement(t *testing.T, ca *agentv1.ConfigAvailable) *agentv1.ConfigAvailable {
	t.Helper()
	wire, err := proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: ca}})
	if err != nil {
		t.Fatal(err)
	}
	var cmd agentv1.Command
	if err := proto.Unmarshal(wire, &cmd); err != nil {
		t.Fatal(err)
	}
	got := cmd.GetConfigAvailable()
	if len(got.ProtoReflect().GetUnknown()) != 0 {
		t.Fatal("the receiver saw pre-encoded fields as unknown")
	}
	return got
}

func TestDeltaAnnouncement(t *testing.T) {
	base := map[string]string{"apps/a.json": "a", "apps/b.json": "b", "apps/c.json": "c", "policy/p.rego": "p"}
	with := func(changes map[string]string, drop ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			if !slices.Contains(drop, k) {
				m[k] = v
			}
		}
		for k, v := range changes {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name        string
		next        map[string]string
		wantDelta   bool
		wantChanged []string
		wantRemoved []string
	}{
		{name: "one file changed", next: with(map[string]string{"apps/b.json": "b2"}), wantDelta: true, wantChanged: []string{"apps/b.json"}},
		{name: "one added, one removed", next: with(map[string]string{"apps/d.json": "d"}, "apps/a.json"), wantDelta: true,
			wantChanged: []string{"apps/d.json"}, wantRemoved: []string{"apps/a.json"}},
		{name: "added before every other path", next: with(map[string]string{"0.json": "z"}), wantDelta: true, wantChanged: []string{"0.json"}},
		{name: "last removed", next: with(nil, "policy/p.rego"), wantDelta: true, wantRemoved: []string{"policy/p.rego"}},
		// A delta as large as the manifest saves nothing: the manifest goes.
		{name: "everything replaced", next: map[string]string{"x/1": "1", "x/2": "2", "x/3": "3", "x/4": "4"}, wantDelta: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, n := testPublished(t, base), testPublished(t, tt.next)
			ca, delta := n.announcement(b, agentFeatures{})
			got := decodeAnnouncement(t, ca)
			if delta != tt.wantDelta || got.GetVersion() != n.version {
				t.Fatalf("delta %v, version %s; want %v, %s", delta, got.GetVersion(), tt.wantDelta, n.version)
			}
			if !delta {
				if got.GetBaseVersion() != "" || !proto.Equal(got.GetManifest(), n.manifest) {
					t.Fatal("a full announcement without exactly the manifest")
				}
				return
			}
			if got.GetManifest() != nil || got.GetBaseVersion() != b.version {
				t.Fatalf("delta with manifest %v, base %s; want none, %s", got.GetManifest(), got.GetBaseVersion(), b.version)
			}
			var changed []string
			for _, f := range got.GetChanged() {
				changed = append(changed, f.GetPath())
				i := slices.IndexFunc(n.manifest.GetFiles(), func(x *agentv1.FileMeta) bool { return x.GetPath() == f.GetPath() })
				if !proto.Equal(f, n.manifest.GetFiles()[i]) {
					t.Errorf("changed entry %v differs from the version's %v", f, n.manifest.GetFiles()[i])
				}
			}
			if !slices.Equal(changed, tt.wantChanged) || !slices.Equal(got.GetRemoved(), tt.wantRemoved) {
				t.Fatalf("changed %v, removed %v; want %v, %v", changed, got.GetRemoved(), tt.wantChanged, tt.wantRemoved)
			}
		})
	}
}

// Every agent serving the same base gets the same bytes, built once.
func TestDeltaIsBuiltOncePerBase(t *testing.T) {
	a := testPublished(t, map[string]string{"x": "1", "y": "2", "z": "3"})
	b := testPublished(t, map[string]string{"x": "1", "y": "2", "z": "4"})
	first, second := b.deltaFrom(a), b.deltaFrom(a)
	if first == nil || &first.wire[0] != &second.wire[0] {
		t.Fatal("the delta was encoded again for the second agent")
	}
}

// An agent with the delta capability gets a delta from the version it
// serves; when it cannot use it, a ManifestRequest brings the full manifest.
func TestDeltaAnnouncementsAndManifestRequest(t *testing.T) {
	h := newHarness(t)
	v1 := testSnapshot(t, map[string]string{"a": "1", "b": "2", "c": "3"})
	v2 := testSnapshot(t, map[string]string{"a": "1", "b": "2", "c": "4"})
	mustPublish(t, h.srv, v1)
	ag, _ := h.connect("token-a", &agentv1.AgentConnectRequest{Capabilities: []string{agentv1.CapabilityDelta}})
	first := ag.nextConfig()
	if first.GetConfigAvailable().GetManifest() == nil {
		t.Fatal("an agent serving nothing got no manifest")
	}
	ag.report(first, agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	eventually(t, "v1 served", func() bool { g, _ := h.agent("agent-a"); return g.VersionServed == v1.Version() })

	mustPublish(t, h.srv, v2)
	delta := ag.nextConfig().GetConfigAvailable()
	if delta.GetBaseVersion() != v1.Version() || len(delta.GetChanged()) != 1 || delta.GetManifest() != nil {
		t.Fatalf("announcement of v2 %v; want a one-entry delta from v1", delta)
	}

	err := ag.stream.Send(&agentv1.Command{Metadata: &agentv1.Metadata{MessageId: "m-1"},
		Payload: &agentv1.Command_ManifestRequest{ManifestRequest: &agentv1.ManifestRequest{Version: v2.Version()}}})
	if err != nil {
		t.Fatal(err)
	}
	full := ag.nextConfig().GetConfigAvailable()
	if full.GetVersion() != v2.Version() || full.GetBaseVersion() != "" || !proto.Equal(full.GetManifest(), agentv1.NewManifest(v2.Files())) {
		t.Fatalf("after a ManifestRequest: %v; want v2 in full", full)
	}

	// An agent without the capability never sees a delta.
	old, _ := h.connect("token-b", &agentv1.AgentConnectRequest{CurrentVersion: v1.Version()})
	if ca := old.nextConfig().GetConfigAvailable(); ca.GetBaseVersion() != "" || ca.GetManifest() == nil {
		t.Fatalf("an agent without the delta capability got %v", ca)
	}
}

// A small delta carries its changed files' content only to agents that take
// it, one content per changed entry; a large one never does.
func TestDeltaContentInline(t *testing.T) {
	files := map[string]string{"x": "1", "y": "2", "z": "3"}
	for i := range 40 {
		files[fmt.Sprintf("pad/%02d", i)] = strings.Repeat("p", 100)
	}
	base := testPublished(t, files)
	with := func(k, v string) map[string]string {
		m := maps.Clone(files)
		m[k] = v
		return m
	}
	big := strings.Repeat("b", maxInlineBytes+1)
	tests := []struct {
		name        string
		next        map[string]string
		inline      bool
		wantContent []string
	}{
		{name: "small change, agent takes inline content", next: with("y", "22"), inline: true, wantContent: []string{"22"}},
		{name: "small change, agent without the capability", next: with("y", "22"), inline: false},
		{name: "empty file changed", next: with("y", ""), inline: true, wantContent: []string{""}},
		{name: "change over the limit", next: with("y", big), inline: true},
		{name: "only a removal", next: func() map[string]string { m := maps.Clone(files); delete(m, "x"); return m }(), inline: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := testPublished(t, tt.next)
			ca, delta := n.announcement(base, agentFeatures{inline: tt.inline})
			if !delta {
				t.Fatal("not a delta")
			}
			got := decodeAnnouncement(t, ca)
			var content []string
			for _, b := range got.GetContent() {
				content = append(content, string(b))
			}
			if !slices.Equal(content, tt.wantContent) {
				t.Fatalf("content %q, want %q", content, tt.wantContent)
			}
			if len(content) > 0 && len(content) != len(got.GetChanged()) {
				t.Fatalf("%d contents for %d changed entries", len(content), len(got.GetChanged()))
			}
		})
	}
}

// An agent that takes columns gets the full manifest as columns, the same
// files; any other agent gets the per-file manifest.
func TestFullAnnouncementInColumns(t *testing.T) {
	p := testPublished(t, map[string]string{"apps/a.json": "a", "policy/p.rego": "p", "secrets/s/k": "s"})
	ca, delta := p.announcement(nil, agentFeatures{columns: true})
	got := decodeAnnouncement(t, ca)
	if delta || got.GetManifest() != nil || got.GetManifestColumns() == nil {
		t.Fatalf("columns agent got delta %v, manifest %v, columns %v", delta, got.GetManifest(), got.GetManifestColumns())
	}
	files, err := got.GetManifestColumns().Files()
	if err != nil || !slices.Equal(files, p.files) {
		t.Fatalf("columns gave %+v, %v; want %+v", files, err, p.files)
	}
	old := decodeAnnouncement(t, func() *agentv1.ConfigAvailable { ca, _ := p.announcement(nil, agentFeatures{}); return ca }())
	if old.GetManifestColumns() != nil || !proto.Equal(old.GetManifest(), p.manifest) {
		t.Fatal("an agent without the capability did not get exactly the manifest")
	}
}
