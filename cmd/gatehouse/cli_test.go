package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runWithin runs a command line and fails the test if it has not ended
// within limit: a command blocked on a named pipe must fail the test, not
// hang the suite.
func runWithin(t *testing.T, ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdin, &out, &errb) }()
	select {
	case code = <-done:
		return code, out.String(), errb.String()
	case <-time.After(limit):
		t.Fatalf("gatehouse %s still running after %v", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

// writeTree creates files under dir; the content "fifo" makes a named
// pipe, "->X" a symbolic link to X.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		var err error
		switch {
		case content == "fifo":
			err = syscall.Mkfifo(p, 0o644)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(strings.TrimPrefix(content, "->"), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
