package client

import (
	"errors"
	"syscall"

	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// transientError marks a failure of the agent's surroundings rather than of
// the content: the proxy did not answer in time, or the version as written
// does not verify.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

func transient(err error) error { return transientError{err} }

// classify tells a failure that the same bytes would meet again (the
// content is invalid: a manifest refused, content that does not match its
// hashes on every try, a version the proxy refuses) from one that may pass:
// anything the operating system reports about the agent's own volume (no
// space, quota, I/O, permissions, a read-only or full file system), an error
// from the control plane, and failures marked transient. Transient ones are
// retried with backoff and never make the control plane stop offering the
// version.
func classify(err error) agentv1.RejectionClass {
	var errno syscall.Errno
	var te transientError
	if errors.As(err, &te) || errors.As(err, &errno) {
		return agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT
	}
	return agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC
}
