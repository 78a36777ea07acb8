package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
)

// Last states an agent can report, as they appear in AgentStatus.
const (
	statusWritten  = "WRITTEN"
	StatusApplied  = "APPLIED"
	StatusRejected = "REJECTED"
)

// Classes of a rejection, as they appear in AgentStatus.RejectionClass.
const (
	// ClassDeterministic: the content is invalid; the agent instance is not
	// offered the version again.
	ClassDeterministic = "deterministic"
	// ClassTransient: the agent's volume or proxy failed; the agent retries.
	ClassTransient = "transient"
)

// Bounds on what is kept of an agent's report.
const (
	maxReasonBytes = 1024
	maxFileErrors  = 20
)

// DebugAgentsPath is where DebugHandler serves the registry.
const DebugAgentsPath = "/debug/agents"

// PodRef names the Pod an agent runs in.
type PodRef struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// FileError is a problem an agent reported with one file.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// AgentStatus is one agent in the registry.
type AgentStatus struct {
	// ID is the Pod UID bound to the agent's token (or a static token's id).
	ID string `json:"id"`
	// Pod is where the agent runs. PodVerified says whether it comes from
	// the token (true) or only from what the agent said (false).
	Pod         PodRef `json:"pod"`
	PodVerified bool   `json:"podVerified"`
	// Username is whom the token belongs to.
	Username     string   `json:"username"`
	AgentVersion string   `json:"agentVersion,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// InstanceID is random per agent process ("" from agents older than
	// the field).
	InstanceID string `json:"instanceId,omitempty"`
	// RemoteAddr is informational only; it never identifies an agent.
	RemoteAddr     string     `json:"remoteAddr,omitempty"`
	Connected      bool       `json:"connected"`
	ConnectedSince time.Time  `json:"connectedSince"`
	DisconnectedAt *time.Time `json:"disconnectedAt,omitempty"`
	// VersionServed is the version the agent last reported APPLIED (or
	// said it serves when it connected).
	VersionServed string `json:"versionServed,omitempty"`
	// VersionAnnounced is the last version sent to the agent.
	VersionAnnounced string     `json:"versionAnnounced,omitempty"`
	AnnouncedAt      *time.Time `json:"announcedAt,omitempty"`
	// InSync says the agent serves the current version.
	InSync bool `json:"inSync"`
	// BehindSince is when this replica first saw the agent not serving the
	// current version, without a break since (nil while it is in sync).
	BehindSince *time.Time `json:"behindSince,omitempty"`
	// Stale says the agent is connected and has been behind for longer
	// than Report.StaleAfter.
	Stale bool `json:"stale"`
	// The agent's last ConfigStatus: WRITTEN, APPLIED or REJECTED ("" if
	// none yet), for which version, when, and why it was rejected.
	LastStatus   string     `json:"lastStatus,omitempty"`
	LastVersion  string     `json:"lastVersion,omitempty"`
	LastStatusAt *time.Time `json:"lastStatusAt,omitempty"`
	LastError    string     `json:"lastError,omitempty"`
	// RejectionClass is ClassDeterministic or ClassTransient when
	// LastStatus is REJECTED.
	RejectionClass string      `json:"rejectionClass,omitempty"`
	FileErrors     []FileError `json:"fileErrors,omitempty"`
}

// Report is the registry as served on DebugAgentsPath.
type Report struct {
	// Version is the current snapshot version ("" before the first Publish).
	Version         string `json:"version"`
	PreviousVersion string `json:"previousVersion,omitempty"`
	// StaleAfter is how long an agent may be behind before it counts as
	// stale (Options.StaleAfter), in Go's duration syntax.
	StaleAfter string        `json:"staleAfter"`
	Agents     []AgentStatus `json:"agents"`
}

// agentRecord is the registry's entry for one agent id. It outlives the
// agent's connections until Retention after the last one ends.
type agentRecord struct {
	id             string
	username       string
	pod            PodRef
	podVerified    bool
	agentVersion   string
	capabilities   []string
	instanceID     string
	remoteAddr     string
	conn           *agentConn // nil while disconnected
	connectedSince time.Time
	disconnectedAt time.Time
	versionServed  string
	behindSince    time.Time // zero while in sync; see trackBehind
	announced      string
	announcedAt    time.Time
	lastStatus     string
	lastVersion    string
	lastStatusAt   time.Time
	lastError      string
	lastClass      string
	fileErrors     []FileError

	// session is the agent instance the rejections below belong to: its
	// instance id, or an id of its stream for agents that send none.
	session string
	// rejected holds the versions this session rejected as invalid (never
	// transient failures); they are not announced to it again. Cleared by
	// Publish and by a new session: a new agent process always gets a
	// fresh chance.
	rejected map[string]struct{}
}

// agentConn is one CommandChannel of an agent, and its one-slot queue.
type agentConn struct {
	rec    *agentRecord
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wake is signalled (never blocking) when pending is set.
	wake chan struct{}
	// recvErr gets the error that ended the receiving side.
	recvErr chan error
	// pending is the newest announcement not yet sent; guarded by
	// Server.mu. Setting it again replaces it: that is the coalescing.
	pending *published
	// delta says the agent takes delta announcements (set at connect);
	// needFull, guarded by Server.mu, that it asked for the next one in
	// full because it lacked the base of a delta.
	delta    bool
	needFull bool
	// features are the agent's announcement features (set at connect).
	features agentFeatures
	// sent maps the message ids of announcements awaiting a final status
	// to what they announced; guarded by Server.mu.
	sent map[string]sentAnnouncement
}

// agentFeatures are the forms of announcement an agent takes besides the
// oldest (agentv1's capabilities).
type agentFeatures struct {
	inline  bool // a small delta's content in the announcement
	columns bool // the full manifest as columns
}

type sentAnnouncement struct {
	version string
	at      time.Time
}

// maxAwaited bounds agentConn.sent; the oldest entries go first.
const maxAwaited = 16

// offer queues snap for the agent; Server.mu must be held.
func (c *agentConn) offer(snap *published) {
	c.pending = snap
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (r *agentRecord) status(current string, now time.Time, staleAfter time.Duration) AgentStatus {
	return AgentStatus{
		ID:               r.id,
		Pod:              r.pod,
		PodVerified:      r.podVerified,
		Username:         r.username,
		AgentVersion:     r.agentVersion,
		Capabilities:     slices.Clone(r.capabilities),
		InstanceID:       r.instanceID,
		RemoteAddr:       r.remoteAddr,
		Connected:        r.conn != nil,
		ConnectedSince:   r.connectedSince,
		DisconnectedAt:   timePtr(r.disconnectedAt),
		VersionServed:    r.versionServed,
		VersionAnnounced: r.announced,
		AnnouncedAt:      timePtr(r.announcedAt),
		InSync:           current != "" && r.versionServed == current,
		BehindSince:      timePtr(r.behindSince),
		Stale:            r.conn != nil && !r.behindSince.IsZero() && now.Sub(r.behindSince) >= staleAfter,
		LastStatus:       r.lastStatus,
		LastVersion:      r.lastVersion,
		LastStatusAt:     timePtr(r.lastStatusAt),
		LastError:        r.lastError,
		RejectionClass:   r.lastClass,
		FileErrors:       slices.Clone(r.fileErrors),
	}
}

// trackBehind starts or ends the record's time behind the current version;
// s.mu held. The start is kept across reconnects, so an agent that keeps
// reconnecting without catching up still turns stale.
func (s *Server) trackBehind(r *agentRecord, now time.Time) {
	switch behind := s.current != nil && r.versionServed != s.current.version; {
	case !behind:
		r.behindSince = time.Time{}
	case r.behindSince.IsZero():
		r.behindSince = now
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Report returns the current version and every agent, sorted by id.
func (s *Server) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{StaleAfter: s.o.StaleAfter.String(), Agents: make([]AgentStatus, 0, len(s.agents))}
	if s.current != nil {
		r.Version = s.current.version
	}
	if s.previous != nil {
		r.PreviousVersion = s.previous.version
	}
	now := s.now()
	for _, rec := range s.agents {
		r.Agents = append(r.Agents, rec.status(r.Version, now, s.o.StaleAfter))
	}
	slices.SortFunc(r.Agents, func(a, b AgentStatus) int { return strings.Compare(a.ID, b.ID) })
	return r
}

// Agents returns every agent in the registry, sorted by id.
func (s *Server) Agents() []AgentStatus { return s.Report().Agents }

// DebugHandler serves GET DebugAgentsPath: the Report as JSON. Mount it on
// the controller's admin port, e.g. mux.Handle(DebugAgentsPath, h).
func (s *Server) DebugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DebugAgentsPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Report())
	})
	return mux
}

// register records a new CommandChannel of the agent and, in the same
// critical section, queues the current version unless the agent serves it
// already or this agent instance rejected it as invalid. An open channel of
// the same agent is closed.
func (s *Server) register(ctx context.Context, id *authn.Identity, req *agentv1.AgentConnectRequest, remote string) (*agentConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errShuttingDown
	}
	now := s.now()
	rec := s.agents[id.AgentID]
	if rec == nil {
		rec = &agentRecord{id: id.AgentID}
		s.agents[id.AgentID] = rec
	}
	if rec.conn != nil {
		rec.conn.cancel(errReplaced)
		s.log.Info("agent reconnected; closing its previous stream", "agent", rec.id, "previousPeer", rec.remoteAddr, "peer", remote)
	}
	c := &agentConn{
		rec:     rec,
		wake:    make(chan struct{}, 1),
		recvErr: make(chan error, 1),
		sent:    map[string]sentAnnouncement{},
	}
	c.delta = slices.Contains(req.GetCapabilities(), agentv1.CapabilityDelta)
	c.features = agentFeatures{
		inline:  c.delta && slices.Contains(req.GetCapabilities(), agentv1.CapabilityInline),
		columns: slices.Contains(req.GetCapabilities(), agentv1.CapabilityColumns),
	}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	if !id.Expiry.IsZero() {
		// Re-authenticate when the token expires: the agent reconnects
		// with the fresh token its kubelet has rotated in.
		var stop context.CancelFunc
		c.ctx, stop = context.WithDeadlineCause(c.ctx, id.Expiry, errTokenExpired)
		cancel := c.cancel
		c.cancel = func(cause error) { cancel(cause); stop() }
	}
	rec.conn = c
	rec.username = id.Username
	rec.agentVersion = req.GetAgentVersion()
	rec.capabilities = slices.Clone(req.GetCapabilities())
	rec.instanceID = req.GetInstanceId()
	session := rec.instanceID
	if session == "" {
		session = "stream:" + s.nextMessageID() // an older agent: every stream is new
	}
	if session != rec.session {
		rec.session, rec.rejected = session, nil
	}
	rec.remoteAddr = remote
	rec.connectedSince = now
	rec.disconnectedAt = time.Time{}
	if id.PodUID != "" {
		rec.pod = PodRef{Name: id.PodName, Namespace: id.PodNamespace, UID: id.PodUID}
		rec.podVerified = true
	} else {
		p := req.GetPod()
		rec.pod = PodRef{Name: p.GetName(), Namespace: p.GetNamespace(), UID: p.GetUid()}
		rec.podVerified = false
	}
	rec.versionServed = req.GetCurrentVersion()
	s.trackBehind(rec, now)
	s.log.Info("agent connected", "agent", rec.id, "pod", rec.pod.Namespace+"/"+rec.pod.Name, "podVerified", rec.podVerified,
		"user", id.Username, "agentVersion", rec.agentVersion, "instance", rec.instanceID, "currentVersion", rec.versionServed, "peer", remote)
	if cur := s.current; cur != nil {
		_, rejected := rec.rejected[cur.version]
		switch {
		case req.GetCurrentVersion() == cur.version:
			rec.lastStatus, rec.lastVersion, rec.lastStatusAt = StatusApplied, cur.version, now
			rec.lastError, rec.lastClass, rec.fileErrors = "", "", nil
		case rejected:
			s.log.Info("this agent instance rejected the current version as invalid; not announcing it again until the next version", "agent", rec.id, "instance", rec.instanceID, "version", cur.version)
		default:
			c.offer(cur)
		}
	}
	s.prune(now)
	return c, nil
}

// unregister ends c; the agent stays in the registry, disconnected, unless
// a newer channel of it has taken over already.
func (s *Server) unregister(c *agentConn) {
	c.cancel(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if c.rec.conn == c {
		c.rec.conn = nil
		c.rec.disconnectedAt = now
	}
	s.prune(now)
}

// prune forgets agents disconnected longer than Retention; s.mu held.
func (s *Server) prune(now time.Time) {
	for id, rec := range s.agents {
		if rec.conn == nil && now.Sub(rec.disconnectedAt) > s.o.Retention {
			delete(s.agents, id)
		}
	}
}

// takePending empties c's slot. base is the version to announce it as a
// delta from, or nil for the full manifest: the version the agent serves,
// if it takes deltas and the server still holds that version.
func (s *Server) takePending(c *agentConn) (snap, base *published) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap = c.pending
	c.pending = nil
	if snap == nil {
		return nil, nil
	}
	if _, rejected := c.rec.rejected[snap.version]; rejected {
		return nil, nil
	}
	if c.delta && !c.needFull {
		base = s.heldLocked(c.rec.versionServed)
	}
	c.needFull = false
	return snap, base
}

// noteSent records the announcement of version with message id msgID,
// about to be sent to c, so that the agent's statuses can be matched to it.
func (s *Server) noteSent(c *agentConn, msgID, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(c.sent) >= maxAwaited {
		oldest := ""
		for mid, a := range c.sent {
			if oldest == "" || a.at.Before(c.sent[oldest].at) {
				oldest = mid
			}
		}
		delete(c.sent, oldest)
	}
	c.sent[msgID] = sentAnnouncement{version: version, at: now}
	if c.rec.conn == c {
		c.rec.announced, c.rec.announcedAt = version, now
	}
}

// requestFull answers a ManifestRequest: the agent could not apply a delta
// announcement of version (it lacks the base), so the current version is
// queued again, to go out with the full manifest. A request for any other
// version is stale: the agent has the current one coming already.
func (s *Server) requestFull(c *agentConn, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metrics.manifestRequests.Inc()
	if c.rec.conn != c || s.current == nil || s.current.version != version {
		s.log.Debug("stale manifest request ignored", "agent", c.rec.id, "version", truncate(version, 80))
		return
	}
	s.log.Info("agent lacks the base of a delta; announcing the version again in full", "agent", c.rec.id, "version", version)
	c.needFull = true
	c.offer(s.current)
}

// recordStatus applies an agent's ConfigStatus to the registry.
func (s *Server) recordStatus(c *agentConn, correlationID string, st *agentv1.ConfigStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := c.rec
	if rec.conn != c {
		return // a replaced channel; the new one speaks for the agent
	}
	version := st.GetVersion()
	sent, known := c.sent[correlationID]
	if version == "" && known {
		version = sent.version
	}
	if version == "" {
		s.log.Warn("agent sent a ConfigStatus naming no version; ignored", "agent", rec.id, "correlationId", correlationID)
		return
	}
	if known && sent.version != version {
		s.log.Warn("agent's ConfigStatus names another version than the announcement it answers", "agent", rec.id, "version", version, "announced", sent.version)
		known = false
	}
	now := s.now()
	switch st.GetState() {
	case agentv1.ConfigState_CONFIG_STATE_WRITTEN:
		rec.lastStatus = statusWritten
		rec.lastError, rec.lastClass, rec.fileErrors = "", "", nil
	case agentv1.ConfigState_CONFIG_STATE_APPLIED:
		rec.lastStatus = StatusApplied
		rec.lastError, rec.lastClass, rec.fileErrors = "", "", nil
		rec.versionServed = version
		s.trackBehind(rec, now)
		// A version the agent refused once and then applied after all is
		// no longer refused.
		delete(rec.rejected, version)
		s.metrics.acks.Inc()
		if known {
			s.metrics.ackLatency.Observe(now.Sub(sent.at).Seconds())
		}
		delete(c.sent, correlationID)
	case agentv1.ConfigState_CONFIG_STATE_REJECTED:
		rec.lastStatus = StatusRejected
		rec.lastError = truncate(st.GetReason(), maxReasonBytes)
		rec.fileErrors = nil
		for i, fe := range st.GetFileErrors() {
			if i == maxFileErrors {
				break
			}
			rec.fileErrors = append(rec.fileErrors, FileError{Path: truncate(fe.GetPath(), maxReasonBytes), Error: truncate(fe.GetError(), maxReasonBytes)})
		}
		s.metrics.nacks.Inc()
		if st.GetRejectionClass() == agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
			// The agent retries by itself; the announcement is still in
			// play, so its APPLIED is matched to it later.
			rec.lastClass = ClassTransient
		} else {
			// Unspecified counts as deterministic; see RejectionClass.
			rec.lastClass = ClassDeterministic
			if s.heldLocked(version) != nil { // bounds the set: only versions it could be offered
				if rec.rejected == nil {
					rec.rejected = map[string]struct{}{}
				}
				rec.rejected[version] = struct{}{}
			}
			delete(c.sent, correlationID)
		}
		s.log.Warn("agent rejected a snapshot", "agent", rec.id, "pod", rec.pod.Namespace+"/"+rec.pod.Name, "version", version,
			"class", rec.lastClass, "reason", rec.lastError, "fileErrors", len(st.GetFileErrors()))
	default:
		s.log.Warn("agent sent a ConfigStatus with an unknown state; ignored", "agent", rec.id, "state", st.GetState().String())
		return
	}
	rec.lastVersion, rec.lastStatusAt = version, now
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
