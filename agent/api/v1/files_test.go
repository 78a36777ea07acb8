package agentv1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// TestFileMetaRoundTrip: what the server announces is what the agent reads
// back, field for field, for every kind.
func TestFileMetaRoundTrip(t *testing.T) {
	files := []snapshot.FileMeta{
		{Path: "gatehouse.json", SHA256: snapshot.Hash([]byte("i")), Size: 1, Mode: 0o644, Kind: snapshot.KindConfig},
		{Path: "policy/p.rego", SHA256: snapshot.Hash([]byte("p")), Size: 1 << 33, Mode: 0o640, Kind: snapshot.KindPolicy},
		{Path: "secrets/s/k", SHA256: snapshot.Hash(nil), Size: 0, Mode: 0o600, Kind: snapshot.KindSecret},
	}
	// Through the encoding, as the agent receives it.
	b, err := proto.Marshal(NewManifest(files))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for i, pm := range m.GetFiles() {
		got, err := pm.SnapshotFileMeta()
		if err != nil || got != files[i] {
			t.Errorf("file %d: %+v, %v; want %+v", i, got, err, files[i])
		}
	}
	for _, k := range []FileKind{FileKind_FILE_KIND_UNSPECIFIED, 42} {
		if _, err := (&FileMeta{Path: "a", Kind: k}).SnapshotFileMeta(); err == nil {
			t.Errorf("kind %v accepted", k)
		}
	}
}

// TestVersionNamesKindsAsTheProtocol: a snapshot's version hashes each
// file's kind by its FileKind name, as the first release hashed the
// protocol's FileMeta; the two must never part.
func TestVersionNamesKindsAsTheProtocol(t *testing.T) {
	for _, k := range []snapshot.Kind{snapshot.KindConfig, snapshot.KindSecret, snapshot.KindPolicy} {
		f := snapshot.FileMeta{Path: "a", SHA256: snapshot.Hash(nil), Size: 0, Mode: 0o640, Kind: k}
		h := sha256.New()
		fmt.Fprintf(h, "gatehouse-snapshot-v1\n%s\x00%s\x00%d\x00%o\x00%s\n", f.Path, f.SHA256, f.Size, uint32(f.Mode), fileKind(k))
		if want := hex.EncodeToString(h.Sum(nil)); snapshot.VersionOf([]snapshot.FileMeta{f}) != want {
			t.Errorf("kind %s: the version does not name it %s", k, fileKind(k))
		}
	}
}

// TestEveryProtocolKindIsAKind: a FileKind the protocol gains must have a
// kind in the snapshot model's table, or the agent would refuse every file
// of it.
func TestEveryProtocolKindIsAKind(t *testing.T) {
	for n, name := range FileKind_name {
		k, ok := snapshot.KindNamed(name)
		if n == int32(FileKind_FILE_KIND_UNSPECIFIED) {
			if ok {
				t.Errorf("%s names kind %q; it must stay unknown", name, k)
			}
			continue
		}
		if !ok || fileKind(k) != FileKind(n) {
			t.Errorf("the protocol's %s has no kind in package snapshot's table (got %q, %v)", name, k, ok)
		}
	}
}
