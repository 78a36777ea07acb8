package server

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// published is a snapshot version the server holds (the current and the
// previous one) with what it prepares to deliver it: the manifest on the
// wire, and the announcements and downloads it encodes once and sends to
// every agent. It is the server's cache of a version; the snapshot itself
// knows nothing of delivery.
type published struct {
	snap       *snapshot.Snapshot
	version    string
	files      []snapshot.FileMeta // snap.Files()
	totalBytes uint64
	manifest   *agentv1.Manifest
	// manifestWire is manifest encoded as ConfigAvailable's field 2.
	manifestWire []byte

	// deltas are the encoded delta announcements from earlier versions to
	// this one, built on first use and shared by every agent; see delta.go.
	deltaMu sync.Mutex
	deltas  map[string]*deltaWire
	// full is the encoded full announcement; see delta.go.
	full preparedAnnouncement
	// whole is the encoded answer to a cold start's download; see
	// packed.go.
	whole wholeVersion
}

// prepare converts snap's files to the wire once, for every agent.
func prepare(snap *snapshot.Snapshot) (*published, error) {
	p := &published{
		snap:       snap,
		version:    snap.Version(),
		files:      snap.Files(),
		totalBytes: uint64(snap.TotalBytes()),
		manifest:   agentv1.NewManifest(snap.Files()),
	}
	wire, err := encodeManifestField(p.manifest)
	if err != nil {
		return nil, err
	}
	p.manifestWire = wire
	return p, nil
}

// encodeManifestField returns the wire encoding of ConfigAvailable's
// manifest field (field 2) holding m. The manifest is the bulk of every
// announcement (about 100 bytes a file) and the same for every agent, so it
// is encoded once per version and attached to each announcement as
// pre-encoded bytes: a protobuf decoder reads them as the manifest field
// like any other encoding of it. Encoding it per agent cost the server most
// of its CPU per change at 1,000 agents (docs/performance.md).
func encodeManifestField(m *agentv1.Manifest) ([]byte, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	const manifestField = 2 // ConfigAvailable.manifest in commander.proto
	b := protowire.AppendTag(make([]byte, 0, len(body)+12), manifestField, protowire.BytesType)
	return protowire.AppendBytes(b, body), nil
}
