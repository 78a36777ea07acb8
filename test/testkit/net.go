package testkit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitHTTP polls url until it answers 200 OK or limit passes.
func WaitHTTP(url string, limit time.Duration) error { return WaitHTTPWhile(url, limit, nil) }

// WaitHTTPWith is WaitHTTP with client c (an HTTPS listener's CA, say).
func WaitHTTPWith(c *http.Client, url string, limit time.Duration) error {
	return waitHTTP(c, url, limit, nil)
}

// WaitHTTPWhile is WaitHTTP that gives up as soon as gone is closed: the
// process that should answer has exited.
func WaitHTTPWhile(url string, limit time.Duration, gone <-chan struct{}) error {
	return waitHTTP(http.DefaultClient, url, limit, gone)
}

func waitHTTP(c *http.Client, url string, limit time.Duration, gone <-chan struct{}) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-gone:
			return fmt.Errorf("the process serving %s exited before it answered 200 OK", url)
		default:
		}
		resp, err := c.Get(url) //nolint:noctx // loopback test helper
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 OK within %s", url, limit)
}

// Fetch GETs url with c and returns the status and the body.
func Fetch(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url) //nolint:noctx // loopback test helper
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
