package server

import (
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// maxDeltasPerVersion bounds published.deltas. The server only builds deltas
// from the versions it still holds (current and previous), so a version
// meets one or two bases in its life; the bound only guards against a bug
// turning the cache into a leak.
const maxDeltasPerVersion = 4

// deltaWire is ConfigAvailable's fields 3 to 5 (base_version, changed,
// removed) from one base to one version, encoded once and attached to the
// announcement of every agent serving that base, as manifestWire is.
type deltaWire struct {
	once sync.Once
	wire []byte
	// inlined is wire with the changed files' content (field 6), for agents
	// with the inline capability; nil when there is none or too much.
	inlined []byte
	err     error
}

// maxInlineBytes bounds the content a delta carries inline. Below it the
// bytes cost less than what they save: a Download stream per agent (its
// headers, authentication, request and answer, a goroutine on each side),
// which at 10,000 agents is about half of the server's CPU per change. A
// one-Application change rewrites one shard of a few kilobytes.
const maxInlineBytes = 64 << 10

// announcement builds the ConfigAvailable for this version with the
// manifest or, when base is set and the delta from it is the smaller, the
// delta, either pre-encoded (see encodeAnnouncementField). delta says which.
// A one-file change of a 10,000-file version is a 200-byte delta against a
// 1 MB manifest; sending the manifest to 1,000 agents cost the server over
// a second of CPU per change and a gigabyte on the wire.
// With inline (the agent's capability), a delta carries the changed files'
// content when it is small; whether to send a delta at all is decided
// without it.
func (s *published) announcement(base *published, f agentFeatures) (ca *agentv1.ConfigAvailable, delta bool) {
	wire := s.manifestWire
	if f.columns {
		wire = s.columnsWire
	}
	if base != nil && base != s {
		if d := s.deltaFrom(base); d != nil && len(d.wire) < len(wire) {
			wire, delta = d.wire, true
			if f.inline && d.inlined != nil {
				wire = d.inlined
			}
		}
	}
	ca = &agentv1.ConfigAvailable{Version: s.version}
	ca.ProtoReflect().SetUnknown(protoreflect.RawFields(wire))
	return ca, delta
}

// preparedAnnouncement is a version's full announcement, a whole Command
// encoded once (grpc.PreparedMsg) and queued as the same bytes on every
// agent's stream. Its metadata is therefore the same for all: a message id
// per version, no agent id (the stream names the agent) and the time it was
// first sent. With a 1 MB manifest, encoding it per agent put a copy per
// agent in gRPC's queues: a gigabyte when 1,000 agents cold-start at once.
// As for downloads, this relies on the server registering no compressor.
type preparedAnnouncement struct {
	once  sync.Once
	msgID string
	msg   *grpc.PreparedMsg
	err   error
}

// fullAnnouncement returns the prepared full announcement, encoding it with
// stream's codec on the first call.
func (s *published) fullAnnouncement(stream grpc.ServerStream, msgPrefix string, now time.Time, f agentFeatures) (*preparedAnnouncement, error) {
	p := &s.full
	if f.columns {
		p = &s.fullColumns
	}
	p.once.Do(func() {
		p.msgID = msgPrefix + "v-" + s.version[:16]
		ca, _ := s.announcement(nil, f)
		cmd := &agentv1.Command{
			Metadata: &agentv1.Metadata{MessageId: p.msgID, Timestamp: timestamppb.New(now)},
			Payload:  &agentv1.Command_ConfigAvailable{ConfigAvailable: ca},
		}
		p.msg = &grpc.PreparedMsg{}
		if err := p.msg.Encode(stream, cmd); err != nil {
			p.err = fmt.Errorf("encode announcement of version %s: %w", s.version, err)
		}
	})
	return p, p.err
}

// deltaFrom returns the encoded delta from base to s, building it on the
// first call; nil if it cannot be built (the caller sends the manifest).
func (s *published) deltaFrom(base *published) *deltaWire {
	s.deltaMu.Lock()
	d := s.deltas[base.version]
	if d == nil {
		if len(s.deltas) >= maxDeltasPerVersion {
			s.deltaMu.Unlock()
			return nil
		}
		if s.deltas == nil {
			s.deltas = make(map[string]*deltaWire, 1)
		}
		d = &deltaWire{}
		s.deltas[base.version] = d
	}
	s.deltaMu.Unlock()
	d.once.Do(func() { d.wire, d.inlined, d.err = encodeDelta(base, s) })
	if d.err != nil {
		return nil
	}
	return d
}

// encodeDelta walks both manifests (sorted by path) side by side, and
// returns the delta and, when the changed content is small, the delta with
// it inline.
func encodeDelta(base, next *published) (wire, inlined []byte, err error) {
	d := &agentv1.ConfigAvailable{BaseVersion: base.version}
	a, b := base.manifest.GetFiles(), next.manifest.GetFiles()
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].GetPath() < b[j].GetPath():
			d.Removed = append(d.Removed, a[i].GetPath())
			i++
		case i == len(a) || b[j].GetPath() < a[i].GetPath():
			d.Changed = append(d.Changed, b[j])
			j++
		default:
			if !sameEntry(a[i], b[j]) {
				d.Changed = append(d.Changed, b[j])
			}
			i++
			j++
		}
	}
	// Only fields 3 to 6 are set, so this is exactly their encoding; the
	// version (field 1) is each announcement's own.
	opts := proto.MarshalOptions{Deterministic: true}
	if wire, err = opts.Marshal(d); err != nil {
		return nil, nil, fmt.Errorf("encode delta from %s to %s: %w", base.version, next.version, err)
	}
	if d.Content = inlineContent(next.snap, d.Changed); d.Content == nil {
		return wire, nil, nil
	}
	if inlined, err = opts.Marshal(d); err != nil {
		return nil, nil, fmt.Errorf("encode delta from %s to %s with its content: %w", base.version, next.version, err)
	}
	return wire, inlined, nil
}

// inlineContent returns the content of each changed file, in order, or nil
// when there is none or more than maxInlineBytes together.
func inlineContent(snap *snapshot.Snapshot, changed []*agentv1.FileMeta) [][]byte {
	var total uint64
	for _, f := range changed {
		total += f.GetSize()
	}
	if len(changed) == 0 || total > maxInlineBytes {
		return nil
	}
	out := make([][]byte, len(changed))
	for i, f := range changed {
		b, ok := snap.Content(f.GetSha256())
		if !ok {
			return nil // cannot happen: changed comes from snap's own manifest
		}
		out[i] = b
	}
	return out
}

func sameEntry(x, y *agentv1.FileMeta) bool {
	return x.GetSha256() == y.GetSha256() && x.GetSize() == y.GetSize() &&
		x.GetMode() == y.GetMode() && x.GetKind() == y.GetKind()
}
