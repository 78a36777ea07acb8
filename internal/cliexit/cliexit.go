package cliexit

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Error ends a command with Code and no message of its own: the command has
// already said why (a failing test, a denial), so only the status is left.
type Error struct{ Code int }

func (e Error) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Status is the exit status of a command that returned err while ctx was
// its context: 0 for nil, the Code of an Error, otherwise 2 with the error
// (or "interrupted", when ctx was cancelled) written to stderr after name.
func Status(ctx context.Context, name string, err error, stderr io.Writer) int {
	var ee Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintln(stderr, name+": interrupted")
		return 2
	default:
		fmt.Fprintln(stderr, name+":", err)
		return 2
	}
}
