package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestPublishRefusesSnapshotsOverLimits(t *testing.T) {
	pair := writeTestPair(t)
	s, err := New(Options{
		Authenticator: authFunc(nil),
		CertFile:      pair.cert,
		KeyFile:       pair.key,
		Limits:        Limits{MaxFiles: 2, MaxFileBytes: 10, MaxTotalBytes: 15},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string]map[string]string{
		"too many files":  {"a": "1", "b": "2", "c": "3"},
		"file too big":    {"a": "01234567890"},
		"too much in all": {"a": "0123456789", "b": "0123456789"},
	} {
		if err := s.Publish(testSnapshot(t, files)); err == nil {
			t.Errorf("%s: published", name)
		}
	}
	if err := s.Publish(testSnapshot(t, map[string]string{"a": "0123456789"})); err != nil {
		t.Errorf("within limits: %v", err)
	}
	if err := s.Publish(nil); err == nil {
		t.Error("nil snapshot published")
	}
	if r := s.Report(); r.Version == "" {
		t.Error("no current version after a good publish")
	}
}

type pairFiles struct{ cert, key string }

func writeTestPair(t *testing.T) pairFiles {
	dir := t.TempDir()
	leaf := newTestCA(t, "ca").leaf(t, "server")
	p := pairFiles{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
	writeAtomic(t, p.cert, leaf.certPEM)
	writeAtomic(t, p.key, leaf.keyPEM)
	return p
}

// The pre-encoded manifest must decode, on the agent's side, to exactly the
// manifest the snapshot holds — and cost far less to send than encoding it.
func TestAnnouncementCarriesTheManifest(t *testing.T) {
	var files []snapshot.File
	for i := range 500 {
		files = append(files, snapshot.File{Path: fmt.Sprintf("apps/%03d.json", i), Data: []byte(fmt.Sprint(i))})
	}
	snap, err := preparedSnapshot(files)
	if err != nil {
		t.Fatal(err)
	}
	cmd := &agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: fullAnnouncement(snap)}}
	wire, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var got agentv1.Command
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	ca := got.GetConfigAvailable()
	if ca.GetVersion() != snap.version {
		t.Fatalf("version %q, want %q", ca.GetVersion(), snap.version)
	}
	if !proto.Equal(ca.GetManifest(), agentv1.NewManifest(snap.snap.Files())) {
		t.Fatal("decoded manifest differs from the snapshot's")
	}
	if len(ca.ProtoReflect().GetUnknown()) != 0 {
		t.Fatal("the receiver saw the manifest as unknown fields")
	}
}

func BenchmarkAnnouncement(b *testing.B) {
	var files []snapshot.File
	for i := range 10000 {
		files = append(files, snapshot.File{Path: fmt.Sprintf("applications/team-%02d/app-%05d.json", i%100, i), Data: []byte(fmt.Sprint(i))})
	}
	snap, err := preparedSnapshot(files)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encoded-per-agent", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: &agentv1.ConfigAvailable{
				Version: snap.version, Manifest: snap.manifest,
			}}})
		}
	})
	b.Run("pre-encoded", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: fullAnnouncement(snap)}})
		}
	})
}

func fullAnnouncement(snap *published) *agentv1.ConfigAvailable {
	ca, _ := snap.announcement(nil, agentFeatures{})
	return ca
}

// preparedSnapshot is a snapshot of files as the server holds it once
// published.
func preparedSnapshot(files []snapshot.File) (*published, error) {
	snap, err := snapshot.New(files)
	if err != nil {
		return nil, err
	}
	return prepare(snap)
}
