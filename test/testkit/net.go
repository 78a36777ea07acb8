package testkit

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a process the test starts to listen on.
//
// The port lies below the kernel's ephemeral range, where it picks ports
// for bind(0) and for every outgoing connection: a port taken from that
// range and closed again goes back to the pool, and another test's
// connection could take it before the process binds it (it happened:
// "bind: address already in use"). Below the range only another FreePort
// could pick it, and this process never hands out a port twice.
func FreePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	lo, hi := belowEphemeral()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if ports.given[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		ports.given[p] = true
		return p, nil
	}
	// Nothing free below the range: take one from the kernel.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ports are the ones FreePort handed out in this process.
var ports = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// belowEphemeral is the range FreePort picks from: from 10000 up to the
// start of the kernel's ephemeral range (Linux's default 32768 when it
// cannot be read).
func belowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var start, end int
		if _, err := fmt.Sscan(string(b), &start, &end); err == nil && start > lo+1000 {
			hi = start
		}
	}
	return lo, hi
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
