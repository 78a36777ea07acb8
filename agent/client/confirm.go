package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// confirmer asks the proxy whether it serves a version, so that an ack
// means "serving", not merely "written to disk".
type confirmer struct {
	url      string
	client   *http.Client
	interval time.Duration
	timeout  time.Duration

	// blamed is a refusal the agent traced to its own volume (the version
	// on disk was damaged; see Agent.apply): the proxy keeps reporting it
	// until it loads the version written again, so await does not take it
	// for a verdict on that version's next write.
	mu     sync.Mutex
	blamed refusal
}

// refusal is the proxy's refusal of a version, with its reason.
type refusal struct{ version, reason string }

// refusedError is await's error for a version the proxy refused.
type refusedError struct{ refusal }

func (e *refusedError) Error() string {
	return fmt.Sprintf("proxy refused version %s: %s", e.version, e.reason)
}

// blame records r as the volume's fault, not the content's.
func (c *confirmer) blame(r refusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blamed = r
}

func (c *confirmer) wasBlamed(r refusal) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blamed == r
}

func (c *confirmer) state(ctx context.Context) (*sidecar.ProxyState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask proxy at %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask proxy at %s: HTTP %d", c.url, resp.StatusCode)
	}
	var s sidecar.ProxyState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&s); err != nil {
		return nil, fmt.Errorf("read proxy state from %s: %w", c.url, err)
	}
	return &s, nil
}

// await polls until the proxy serves version (nil) or refuses it (an error
// carrying the proxy's reason: the content is invalid), or the timeout
// passes (a transient error: the proxy may be busy, restarting or down).
func (c *confirmer) await(ctx context.Context, version string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var last error
	for {
		s, err := c.state(ctx)
		switch {
		case err != nil:
			last = err
		case s.ServedVersion == version:
			return nil
		case s.RejectedVersion == version:
			if r := (refusal{version, s.RejectedReason}); !c.wasBlamed(r) {
				return &refusedError{r}
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("proxy still serves another version")
			}
			return transient(fmt.Errorf("proxy did not load version %s within %s: %w", version, c.timeout, last))
		case <-t.C:
		}
	}
}
