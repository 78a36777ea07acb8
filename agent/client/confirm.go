package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
			return fmt.Errorf("proxy refused version %s: %s", version, s.RejectedReason)
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
