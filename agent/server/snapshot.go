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
	// manifestWire is manifest encoded as ConfigAvailable's field 2, and
	// columnsWire the same files as field 7 (manifest_columns), for agents
	// with the columns capability.
	manifestWire []byte
	columnsWire  []byte

	// deltas are the encoded delta announcements from earlier versions to
	// this one, built on first use and shared by every agent; see delta.go.
	deltaMu sync.Mutex
	deltas  map[string]*deltaWire
	// full and fullColumns are the encoded full announcements, with the
	// manifest and with its columns; see delta.go.
	full, fullColumns preparedAnnouncement
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
	var err error
	if p.manifestWire, err = encodeAnnouncementField(manifestField, p.manifest); err != nil {
		return nil, err
	}
	columns, err := agentv1.NewManifestColumns(p.files)
	if err != nil {
		return nil, fmt.Errorf("encode manifest columns: %w", err)
	}
	if p.columnsWire, err = encodeAnnouncementField(columnsField, columns); err != nil {
		return nil, err
	}
	return p, nil
}

// ConfigAvailable's fields in commander.proto that are encoded once per
// version.
const (
	manifestField = 2
	columnsField  = 7
)

// encodeAnnouncementField returns the wire encoding of ConfigAvailable's
// field holding m: the manifest (field 2) or its columns (field 7). The
// manifest is the bulk of every
// announcement (about 100 bytes a file) and the same for every agent, so it
// is encoded once per version and attached to each announcement as
// pre-encoded bytes: a protobuf decoder reads them as the manifest field
// like any other encoding of it. Encoding it per agent cost the server most
// of its CPU per change at 1,000 agents (docs/performance.md).
func encodeAnnouncementField(field protowire.Number, m proto.Message) ([]byte, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	b := protowire.AppendTag(make([]byte, 0, len(body)+12), field, protowire.BytesType)
	return protowire.AppendBytes(b, body), nil
}
