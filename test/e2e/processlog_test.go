package e2e

import (
	"bytes"
	"sync"
)

// processLog collects a child process's output. exec copies the output in a
// goroutine of its own, so a test that reads the log while the process runs
// (to explain a failure) must read under the same lock.
type processLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *processLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
