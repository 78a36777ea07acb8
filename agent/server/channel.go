package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// Why a CommandChannel was ended by the server; see endStatus.
var (
	errShuttingDown = errors.New(agentv1.EndShuttingDown)
	errReplaced     = errors.New("replaced by a newer connection of the same agent")
	errTokenExpired = errors.New(agentv1.EndTokenExpired)
)

type received struct {
	cmd *agentv1.Command
	err error
}

// CommandChannel implements agentv1.CommanderServer. The stream was
// authenticated by the interceptor; see the package comment for what
// happens on it.
func (s *Server) CommandChannel(stream grpc.BidiStreamingServer[agentv1.Command, agentv1.Command]) error {
	ctx := stream.Context()
	id := identityFrom(ctx)
	if id == nil {
		return status.Error(codes.Unauthenticated, "stream not authenticated")
	}

	// One goroutine receives for the stream's whole life: first the
	// connect_request, then, once the agent is registered, its statuses.
	// It never waits on the sending side, so an agent that is slow to
	// read cannot stall the processing of what it reports.
	first := make(chan received, 1)
	handoff := make(chan *agentConn, 1)
	defer close(handoff)
	go s.receive(stream, first, handoff)

	timer := time.NewTimer(connectTimeout)
	defer timer.Stop()
	var r received
	select {
	case r = <-first:
	case <-timer.C:
		return status.Errorf(codes.DeadlineExceeded, "no connect_request within %s", connectTimeout)
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	if r.err != nil {
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		return r.err
	}
	req := r.cmd.GetConnectRequest()
	if req == nil {
		return status.Error(codes.InvalidArgument, "the first message on a CommandChannel must be a connect_request")
	}
	if id.PodUID != "" && req.GetPod().GetUid() != "" && req.GetPod().GetUid() != id.PodUID {
		reason := fmt.Sprintf("pod uid %q differs from the Pod %s/%s (uid %s) the token is bound to", req.GetPod().GetUid(), id.PodNamespace, id.PodName, id.PodUID)
		s.log.Warn("agent refused", "agent", id.AgentID, "peer", peerAddr(ctx), "reason", reason)
		refusal := s.envelope(id.AgentID, r.cmd.GetMetadata().GetMessageId())
		refusal.Payload = &agentv1.Command_ConnectResponse{
			ConnectResponse: &agentv1.AgentConnectResponse{Accepted: false, Reason: reason},
		}
		_ = stream.Send(refusal)
		return status.Error(codes.PermissionDenied, reason)
	}
	if s.isClosing() {
		return status.Error(codes.Unavailable, errShuttingDown.Error())
	}
	accept := s.envelope(id.AgentID, r.cmd.GetMetadata().GetMessageId())
	accept.Payload = &agentv1.Command_ConnectResponse{
		ConnectResponse: &agentv1.AgentConnectResponse{Accepted: true, Settings: s.settings(), CurrentVersion: s.currentVersion()},
	}
	if err := stream.Send(accept); err != nil {
		return err
	}
	c, err := s.register(ctx, id, req, peerAddr(ctx))
	if err != nil {
		return endStatus(ctx, err)
	}
	defer s.unregister(c)
	handoff <- c

	err = s.sendLoop(stream, c)
	s.log.Info("agent disconnected", "agent", id.AgentID, "reason", err)
	return err
}

// receive reads the stream until it ends; see CommandChannel.
func (s *Server) receive(stream grpc.BidiStreamingServer[agentv1.Command, agentv1.Command], first chan<- received, handoff <-chan *agentConn) {
	cmd, err := stream.Recv()
	first <- received{cmd, err}
	if err != nil {
		return
	}
	c, ok := <-handoff
	if !ok {
		return
	}
	for {
		cmd, err := stream.Recv()
		if err != nil {
			c.recvErr <- err
			return
		}
		switch p := cmd.GetPayload().(type) {
		case *agentv1.Command_ConfigStatus:
			s.recordStatus(c, cmd.GetMetadata().GetCorrelationId(), p.ConfigStatus)
		case *agentv1.Command_ManifestRequest:
			s.requestFull(c, p.ManifestRequest.GetVersion())
		case *agentv1.Command_Keepalive:
		default:
			s.log.Warn("agent sent an unexpected message; ignored", "agent", c.rec.id, "type", fmt.Sprintf("%T", p))
		}
	}
}

// sendLoop is the agent's sender: it sends whatever is in the agent's slot
// and a Keepalive when nothing was sent for a keepalive interval, until the
// stream ends.
func (s *Server) sendLoop(stream grpc.BidiStreamingServer[agentv1.Command, agentv1.Command], c *agentConn) error {
	idle := time.NewTimer(s.o.KeepaliveInterval)
	defer idle.Stop()
	for {
		select {
		case <-c.wake:
			snap, base := s.takePending(c)
			if snap == nil {
				continue
			}
			if err := s.announce(stream, c, snap, base); err != nil {
				return err
			}
		case <-idle.C:
			ka := s.envelope(c.rec.id, "")
			ka.Payload = &agentv1.Command_Keepalive{Keepalive: &agentv1.Keepalive{}}
			if err := stream.Send(ka); err != nil {
				return err
			}
		case err := <-c.recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-c.ctx.Done():
			return endStatus(c.ctx, context.Cause(c.ctx))
		}
		idle.Reset(s.o.KeepaliveInterval)
	}
}

// announce sends snap to c: as a delta from base when that is smaller,
// else the full announcement, which is encoded once per version and shared
// by every agent (see published.fullAnnouncement).
func (s *Server) announce(stream grpc.BidiStreamingServer[agentv1.Command, agentv1.Command], c *agentConn, snap, base *published) error {
	if base != nil {
		if ca, delta := snap.announcement(base, c.features); delta {
			msgID := s.nextMessageID()
			s.noteSent(c, msgID, snap.version)
			cmd := &agentv1.Command{Metadata: s.metadata(msgID, "", c.rec.id)}
			cmd.Payload = &agentv1.Command_ConfigAvailable{ConfigAvailable: ca}
			if err := stream.Send(cmd); err != nil {
				return err
			}
			s.metrics.announcements.Inc()
			s.metrics.deltaAnnouncements.Inc()
			return nil
		}
	}
	full, err := snap.fullAnnouncement(stream, s.msgPrefix, s.now(), c.features)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	s.noteSent(c, full.msgID, snap.version)
	if err := stream.SendMsg(full.msg); err != nil {
		return err
	}
	s.metrics.announcements.Inc()
	return nil
}

// endStatus is the gRPC status a CommandChannel ends with for cause.
func endStatus(ctx context.Context, cause error) error {
	switch {
	case errors.Is(cause, errShuttingDown), errors.Is(cause, errTokenExpired):
		return status.Error(codes.Unavailable, cause.Error())
	case errors.Is(cause, errReplaced):
		return status.Error(codes.Aborted, cause.Error())
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Internal, cause.Error())
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// envelope is a Command with fresh metadata, answering correlationID if set.
func (s *Server) envelope(agentID, correlationID string) *agentv1.Command {
	return &agentv1.Command{Metadata: s.metadata(s.nextMessageID(), correlationID, agentID)}
}

func (s *Server) metadata(msgID, correlationID, agentID string) *agentv1.Metadata {
	return &agentv1.Metadata{
		MessageId:     msgID,
		CorrelationId: correlationID,
		AgentId:       agentID,
		Timestamp:     timestamppb.New(s.now()),
	}
}

func durationProto(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
