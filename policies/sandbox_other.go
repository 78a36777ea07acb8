//go:build !unix

package policies

import "errors"

// limitMemory cannot limit memory here: refuse to run unbounded.
func limitMemory(int64) error {
	return errors.New("not supported on this system")
}
