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
	err  error
}

// announcement builds the ConfigAvailable for this version with the
// manifest or, when base is set and the delta from it is the smaller, the
// delta, either pre-encoded (see encodeManifestField). delta says which.
// A one-file change of a 10,000-file version is a 200-byte delta against a
// 1 MB manifest; sending the manifest to 1,000 agents cost the server over
// a second of CPU per change and a gigabyte on the wire.
func (s *published) announcement(base *published) (ca *agentv1.ConfigAvailable, delta bool) {
	wire := s.manifestWire
	if base != nil && base != s {
		if d := s.deltaFrom(base); d != nil && len(d) < len(wire) {
			wire, delta = d, true
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
func (s *published) fullAnnouncement(stream grpc.ServerStream, msgPrefix string, now time.Time) (*preparedAnnouncement, error) {
	p := &s.full
	p.once.Do(func() {
		p.msgID = msgPrefix + "v-" + s.version[:16]
		ca, _ := s.announcement(nil)
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
func (s *published) deltaFrom(base *published) []byte {
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
	d.once.Do(func() { d.wire, d.err = encodeDelta(base, s) })
	if d.err != nil {
		return nil
	}
	return d.wire
}

// encodeDelta walks both manifests (sorted by path) side by side.
func encodeDelta(base, next *published) ([]byte, error) {
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
	// Only fields 3 to 5 are set, so this is exactly their encoding; the
	// version (field 1) is each announcement's own.
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode delta from %s to %s: %w", base.version, next.version, err)
	}
	return wire, nil
}

func sameEntry(x, y *agentv1.FileMeta) bool {
	return x.GetSha256() == y.GetSha256() && x.GetSize() == y.GetSize() &&
		x.GetMode() == y.GetMode() && x.GetKind() == y.GetKind()
}
