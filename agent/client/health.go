package client

import (
	"fmt"
	"strings"
	"sync"
	"time"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// Status is how current the agent's proxy is, as the agent sees it: what it
// serves, what the control plane says is current, and why they differ.
// /readyz, the gatehouse_agent_stale and gatehouse_agent_behind_seconds
// metrics and the logs all read it.
type Status struct {
	// Serving is the version on the volume that passed the proxy's
	// verifying loader (and, with --confirm-url, that the proxy serves);
	// "" before any.
	Serving string
	// Current is the control plane's current version as last heard (an
	// announcement, or the answer to a connect); "" before it said any.
	Current string
	// BehindSince is when the agent last stopped serving Current, and
	// Behind how long ago that is; zero while it serves it (or Current is
	// unknown).
	BehindSince time.Time
	Behind      time.Duration
	// Stale: behind for longer than Options.StaleAfter.
	Stale bool
	// Ready is what /readyz answers; see Options.UnreadyAfter.
	Ready bool
	// Reason says why nothing is served or why the agent is behind.
	Reason string
	// Connected: the command channel is open. ConnectionError is why the
	// last one ended or could not be opened.
	Connected       bool
	ConnectionError string
}

// summary is Status in one line, as /readyz prints it.
func (s Status) summary() string {
	if s.Serving == "" {
		return "no snapshot served yet" + suffix(s.Reason)
	}
	line := "serving " + s.Serving
	if !s.BehindSince.IsZero() {
		state := "behind"
		if s.Stale {
			state = "stale"
		}
		line += fmt.Sprintf("; %s: the control plane's current version is %s, not applied for %s%s",
			state, short(s.Current), s.Behind.Round(time.Second), suffix(s.Reason))
	}
	if !s.Connected && s.ConnectionError != "" {
		line += "; disconnected from the control plane: " + s.ConnectionError
	}
	return line
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// health holds what Status is computed from. Its methods are safe for
// concurrent use: the worker, the stream and the admin endpoint share it.
type health struct {
	staleAfter, unreadyAfter time.Duration
	now                      func() time.Time

	mu          sync.Mutex
	serving     string
	current     string
	behindSince time.Time
	failure     *failure // the last failed attempt; nil once a version applies
	damaged     string   // why the volume's version did not verify (at start, or in a full check)
	connected   bool
	connErr     string
}

// failure is one failed attempt to apply a version.
type failure struct {
	version string
	class   agentv1.RejectionClass
	reason  string
}

// heard notes the control plane's current version.
func (h *health) heard(version string) {
	if version == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current = version
	h.track()
}

// served notes that version is now served.
func (h *health) served(version string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.serving, h.failure, h.damaged = version, nil, ""
	h.track()
}

// failed notes a failed attempt to apply version.
func (h *health) failed(version string, class agentv1.RejectionClass, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failure = &failure{version: version, class: class, reason: err.Error()}
}

// damagedAtStart notes that the version on the volume did not verify.
func (h *health) damagedAtStart(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.damaged = err.Error()
}

// damagedNow notes that a full check found the volume's version damaged
// while the agent serves one, and reports whether it did serve one: the
// proxy still serves what it loaded (and verified) before, so the agent
// stays ready, but it no longer reports that version to the control plane
// (reported), which then sends it again.
func (h *health) damagedNow(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.damaged = err.Error()
	return h.serving != ""
}

// reported is the version the agent tells the control plane it serves: none
// while the volume's copy is known damaged.
func (h *health) reported() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.damaged != "" {
		return ""
	}
	return h.serving
}

func (h *health) connection(connected bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connected = connected
	if err != nil {
		h.connErr = err.Error()
	} else if connected {
		h.connErr = ""
	}
}

// track starts or ends the time behind; h.mu held.
func (h *health) track() {
	switch behind := h.current != "" && h.serving != h.current; {
	case !behind:
		h.behindSince = time.Time{}
	case h.behindSince.IsZero():
		h.behindSince = h.now()
	}
}

// status computes Status. A stale agent stays ready unless it has been
// behind for longer than unreadyAfter for a reason of its own (its volume,
// its proxy, a slow download): a version rejected as invalid is refused by
// every replica alike, and taking them all out of the Service would turn a
// bad push into an outage, while each keeps serving the last good snapshot.
func (h *health) status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{
		Serving: h.serving, Current: h.current, BehindSince: h.behindSince,
		Connected: h.connected, ConnectionError: h.connErr,
	}
	switch {
	case h.damaged != "":
		st.Reason = "the snapshot on the volume is damaged (" + h.damaged + "); it is downloaded again"
	case h.failure != nil && (h.failure.version == h.current || h.current == ""):
		st.Reason = describe(h.failure)
	case !h.behindSince.IsZero():
		st.Reason = "not applied yet"
	}
	if h.serving == "" {
		return st
	}
	st.Ready = true
	if h.behindSince.IsZero() {
		return st
	}
	behind := h.now().Sub(h.behindSince)
	st.Behind = behind
	st.Stale = behind >= h.staleAfter
	invalid := h.failure != nil && h.failure.version == h.current && h.failure.class != agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT
	if h.unreadyAfter > 0 && behind >= h.unreadyAfter && !invalid {
		st.Ready = false
	}
	return st
}

func describe(f *failure) string {
	what := "rejected as invalid"
	if f.class == agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT {
		what = "failed, retrying"
	}
	return fmt.Sprintf("version %s %s: %s", short(f.version), what, strings.TrimSpace(f.reason))
}

func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}
