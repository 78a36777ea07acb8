package source

import (
	"errors"
	"fmt"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// Error is a failed fetch: the Ready condition's reason and a message that
// says what to do. The message never holds a credential.
type Error struct {
	Reason  string
	Message string
	// Transient errors (the network, a server's 5xx or 429) are worth
	// retrying soon; the others need a person.
	Transient bool
	// cause is kept for errors.Is (never shown: Message says it all).
	cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.cause }

func errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func transient(format string, args ...any) *Error {
	return &Error{Reason: gatehousev1.ReasonFetchFailed, Message: fmt.Sprintf(format, args...), Transient: true}
}

// Reason is the condition reason of err: its own when it is an *Error,
// FetchFailed otherwise.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return gatehousev1.ReasonFetchFailed
}
