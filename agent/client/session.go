package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// session is one CommandChannel: connect, then handle announcements until
// the stream ends. Announcements are handled one at a time by a worker that
// always takes the newest, so a burst of versions costs one download.
// proven is set once the session has shown the controller healthy (see
// stream_.proven); it is final when session returns.
func (a *Agent) session(ctx context.Context, rpc agentv1.CommanderClient, proven *atomic.Bool) error {
	token, err := a.readToken()
	if err != nil {
		return err
	}
	// The worker's downloads use ctx (they attach a freshly read token);
	// the stream carries the token read for this connection.
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	a.abort.Store(&cancelCause)
	defer a.abort.Store(nil)
	a.o.Metrics.connectAttempt()
	stream, err := rpc.CommandChannel(withToken(ctx, token))
	if err != nil {
		return fmt.Errorf("open command channel: %w", err)
	}
	s := &stream_{stream: stream, agentID: a.o.AgentID, healthy: proven}
	if err := s.send(&agentv1.Command{Payload: &agentv1.Command_ConnectRequest{ConnectRequest: &agentv1.AgentConnectRequest{
		AgentId:        a.o.AgentID,
		Pod:            a.o.Pod,
		AgentVersion:   a.o.Version,
		Capabilities:   a.capabilities(),
		CurrentVersion: a.health.reported(),
		InstanceId:     a.instanceID,
	}}}, ""); err != nil {
		return fmt.Errorf("send connect request: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("wait for connect response: %w", err)
	}
	resp := first.GetConnectResponse()
	if resp == nil {
		return errors.New("control plane answered the connect request with something else")
	}
	if !resp.GetAccepted() {
		return fmt.Errorf("control plane refused this agent: %s", resp.GetReason())
	}
	s.serverPacked = slices.Contains(resp.GetSettings().GetCapabilities(), agentv1.CapabilityPacked)
	a.o.Metrics.connected()
	a.certAskedWithout.Store(false)
	a.health.connection(true, nil)
	a.health.heard(resp.GetCurrentVersion())
	a.o.Logger.Info("connected to control plane", "address", a.o.Address, "serving", a.Serving(), "current", resp.GetCurrentVersion())

	latest := make(chan *announcement, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.work(ctx, rpc, s, latest)
	}()
	defer wg.Wait()
	defer cancel()
	for {
		cmd, err := stream.Recv()
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errServedDamaged) {
				return cause
			}
			return fmt.Errorf("command channel: %w", err)
		}
		switch p := cmd.GetPayload().(type) {
		case *agentv1.Command_ConfigAvailable:
			a.health.heard(p.ConfigAvailable.GetVersion())
			offer(latest, &announcement{id: cmd.GetMetadata().GetMessageId(), config: p.ConfigAvailable})
		case *agentv1.Command_Keepalive:
			s.proven()
		default:
			a.o.Logger.Debug("ignoring unexpected command", "type", fmt.Sprintf("%T", p))
		}
	}
}

type announcement struct {
	id     string
	config *agentv1.ConfigAvailable
	// inline is a small delta's content, by SHA-256 (see inlined).
	inline map[string][]byte
}

// offer replaces any pending announcement with the newer one.
func offer(ch chan *announcement, an *announcement) {
	for {
		select {
		case ch <- an:
			return
		default:
			select {
			case <-ch:
			default:
			}
		}
	}
}

// work handles announcements one at a time, newest first. A version that
// failed for a transient reason is tried again when its backoff is due,
// unless a newer announcement comes first.
func (a *Agent) work(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, latest chan *announcement) {
	var r *retry
	defer func() { r.stop() }()
	for {
		var due <-chan time.Time
		if r != nil {
			due = r.timer.C
		}
		select {
		case <-ctx.Done():
			return
		case an := <-latest:
			r.stop()
			r = a.handle(ctx, rpc, s, an)
		case <-due:
			r = a.attempt(ctx, rpc, s, r)
		}
	}
}

func (a *Agent) capabilities() []string {
	caps := []string{agentv1.CapabilityDelta, agentv1.CapabilityPacked, agentv1.CapabilityInline, agentv1.CapabilityColumns}
	if a.confirm != nil {
		caps = append(caps, agentv1.CapabilityConfirm)
	}
	return caps
}

// stream_ serialises sends: gRPC allows one sender at a time per stream.
type stream_ struct {
	mu      sync.Mutex
	stream  agentv1.Commander_CommandChannelClient
	agentID string
	// serverPacked: the server takes downloads by bitmap (set at connect).
	serverPacked bool
	// healthy: see proven.
	healthy *atomic.Bool
}

// proven notes that the session has shown the controller healthy: after
// accepting the agent it sent a Keepalive, or an announcement the agent took
// (one it refused does not count). An accepted connect alone does not: a
// controller that accepts and drops at once must not reset the reconnect
// backoff (see backoff.after).
func (s *stream_) proven() {
	if s.healthy != nil {
		s.healthy.Store(true)
	}
}

func (s *stream_) send(cmd *agentv1.Command, correlation string) error {
	cmd.Metadata = &agentv1.Metadata{
		MessageId:     newID(),
		CorrelationId: correlation,
		AgentId:       s.agentID,
		Timestamp:     timestamppb.New(time.Now()),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Send(cmd)
}

func (s *stream_) status(an *announcement, state agentv1.ConfigState, reason string, fileErrs []*agentv1.FileError) error {
	return s.send(&agentv1.Command{Payload: &agentv1.Command_ConfigStatus{ConfigStatus: &agentv1.ConfigStatus{
		Version: an.config.GetVersion(), State: state, Reason: reason, FileErrors: fileErrs,
	}}}, an.id)
}

// reject reports REJECTED, saying whether a retry can help.
func (s *stream_) reject(an *announcement, class agentv1.RejectionClass, reason string, fileErrs []*agentv1.FileError) error {
	return s.send(&agentv1.Command{Payload: &agentv1.Command_ConfigStatus{ConfigStatus: &agentv1.ConfigStatus{
		Version: an.config.GetVersion(), State: agentv1.ConfigState_CONFIG_STATE_REJECTED, Reason: reason,
		FileErrors: fileErrs, RejectionClass: class,
	}}}, an.id)
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
