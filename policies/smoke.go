package policies

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// smokeInputs are the requests Check decides: the example input, for an
// Application, and the same user calling a system extension.
func smokeInputs() []Input {
	app, err := decodeInput(ExampleInput())
	if err != nil {
		panic(fmt.Sprintf("%s: %v", exampleInputPath, err)) // embedded at build time
	}
	system := Input{User: app.User, Extension: app.Extension, Request: app.Request}
	return []Input{app, system}
}

// smokeTest decides the smoke inputs within timeout. Only running out of
// time refuses the policy: any other evaluation error may be particular to
// these inputs, and the proxy denies on it anyway. A decision stopped at the
// bound is tried once more, so that a machine stalled for ten times the
// bound (see hardStopFactor) does not refuse a good policy.
func (c *compiled) smokeTest(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	for _, in := range smokeInputs() {
		in.normalize()
		var err error
		for range 2 {
			_, err = c.eval(ctx, &in, timeout)
			if te := (*evalTimeoutError)(nil); !errors.As(err, &te) {
				break
			}
		}
		if te := (*evalTimeoutError)(nil); errors.As(err, &te) {
			kind := "the example request for an Application"
			if in.Application == nil {
				kind = "the example request for a system extension"
			}
			return fmt.Errorf("policy %s: deciding %s: %w, twice; the proxy would deny every request like it: make the policy faster (look for comprehensions or iterations over large collections)",
				c.name(), kind, te)
		}
	}
	return nil
}

func (c *compiled) name() string {
	if c.revision == "" {
		return "(no revision)"
	}
	return ShortRevision(c.revision)
}
