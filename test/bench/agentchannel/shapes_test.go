//go:build linux

package agentchannel

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// shape is the make-up of a snapshot: application-index shards (one
// Application each, JSON), TLS secrets (PEM) and one compiled policy bundle
// (incompressible, like a .tar.gz).
type shape struct {
	name        string
	shards      int
	shardBytes  int
	secrets     int
	secretBytes int
	policyBytes int
}

var (
	// shapeSmall is the 100 KB snapshot: 100 small files.
	shapeSmall = shape{name: "100KB", shards: 96, shardBytes: 950, secrets: 3, secretBytes: 1500, policyBytes: 5000}
	// shapeLarge is the 10 MB snapshot: ≈10,000 Applications in
	// 10,000 index shards, 64 TLS secrets, one policy bundle.
	shapeLarge = shape{name: "10MB", shards: 10000, shardBytes: 870, secrets: 64, secretBytes: 4096, policyBytes: 1 << 20}
)

func shapeByName(name string) (shape, bool) {
	for _, s := range []shape{shapeSmall, shapeLarge} {
		if s.name == name {
			return s, true
		}
	}
	return shape{}, false
}

func (s shape) fileCount() int { return s.shards + s.secrets + 1 }

// changedShard is the shard that change seq (1, 2, ...) edits. Version seq
// holds changes 1..seq, so going from seq-1 to seq changes exactly one file.
// 7919 is prime and so coprime with both shard counts: the first
// min(shards, seq) changes touch distinct shards.
func (s shape) changedShard(seq int) int { return (seq * 7919) % s.shards }

// snapshotFiles builds the files of one shape; base holds the unchanged
// contents (built once) so a version costs only its changed shards.
type snapshotFiles struct {
	shape shape
	base  []snapshot.File
}

func newSnapshotFiles(s shape) *snapshotFiles {
	sf := &snapshotFiles{shape: s, base: make([]snapshot.File, 0, s.fileCount())}
	for i := range s.shards {
		sf.base = append(sf.base, snapshot.File{Path: shardPath(i), Kind: snapshot.KindConfig, Data: shardContent(i, 0, s.shardBytes)})
	}
	for i := range s.secrets {
		sf.base = append(sf.base, snapshot.File{Path: fmt.Sprintf("secrets/tls-%02d.pem", i), Kind: snapshot.KindSecret, Data: pemContent(i, s.secretBytes)})
	}
	sf.base = append(sf.base, snapshot.File{
		Path: "policies/bundle.tar.gz", Kind: snapshot.KindPolicy,
		Data: randomBytes(rand.New(rand.NewPCG(3, 3)), s.policyBytes),
	})
	return sf
}

// files returns version seq: the base with changes 1..seq applied.
func (sf *snapshotFiles) files(seq int) []snapshot.File {
	out := make([]snapshot.File, len(sf.base))
	copy(out, sf.base)
	for j := 1; j <= seq; j++ {
		i := sf.shape.changedShard(j)
		out[i].Data = shardContent(i, j, sf.shape.shardBytes)
	}
	return out
}

func shardPath(i int) string { return fmt.Sprintf("applications/shard-%05d.json", i) }

// shardContent is one Application's index entry, padded to size bytes.
func shardContent(i, revision, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"shard":%d,"revision":%d,"applications":[{"name":"app-%05d","namespace":"team-%02d",`+
		`"project":"project-%03d","destination":{"server":"https://cluster-%02d.example.internal:6443","namespace":"app-%05d"},`+
		`"extensions":["metrics","logs"],"labels":{"team":"team-%02d","tier":"backend"},"pad":"`,
		i, revision, i, i%90, i/10, i%16, i, i%90)
	r := rand.New(rand.NewPCG(uint64(i), uint64(revision)))
	for b.Len() < size-4 {
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(36)])
	}
	b.WriteString(`"}]}`)
	return []byte(b.String())
}

// pemContent is a PEM certificate and key of about size bytes.
func pemContent(i, size int) []byte {
	r := rand.New(rand.NewPCG(2, uint64(i)))
	body := base64.StdEncoding.EncodeToString(randomBytes(r, size*3/4-120))
	var b strings.Builder
	half := len(body) / 2
	for k, part := range []string{body[:half], body[half:]} {
		typ := "CERTIFICATE"
		if k == 1 {
			typ = "EC PRIVATE KEY"
		}
		b.WriteString("-----BEGIN " + typ + "-----\n")
		for len(part) > 64 {
			b.WriteString(part[:64] + "\n")
			part = part[64:]
		}
		b.WriteString(part + "\n-----END " + typ + "-----\n")
	}
	return []byte(b.String())
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
