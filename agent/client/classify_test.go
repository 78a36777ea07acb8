package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// What the same bytes would meet again is deterministic; what the agent's
// own volume, proxy or connection did is transient.
func TestClassify(t *testing.T) {
	const (
		transientClass     = agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT
		deterministicClass = agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC
	)
	onDisk := func(op string, errno syscall.Errno) error {
		return fmt.Errorf("download v2: config/a.json: write: %w", &fs.PathError{Op: op, Path: "/volume/versions/v2.tmp-x/config/a.json", Err: errno})
	}
	tests := []struct {
		name string
		err  error
		want agentv1.RejectionClass
	}{
		{"disk full", onDisk("write", syscall.ENOSPC), transientClass},
		{"quota", onDisk("write", syscall.EDQUOT), transientClass},
		{"file size limit", onDisk("write", syscall.EFBIG), transientClass},
		{"I/O error on fsync", onDisk("sync", syscall.EIO), transientClass},
		{"permission denied", onDisk("open", syscall.EACCES), transientClass},
		{"read-only volume", onDisk("mkdir", syscall.EROFS), transientClass},
		{"link across file systems", fmt.Errorf("stage: %w", &fs.PathError{Op: "linkat", Err: syscall.EXDEV}), transientClass},
		{"control plane no longer holds the version", fmt.Errorf("download v2: %w", status.Error(codes.NotFound, "version v2 is not held")), transientClass},
		{"connection lost mid-download", fmt.Errorf("download v2: %w", status.Error(codes.Unavailable, "transport is closing")), transientClass},
		{"proxy did not answer in time", transient(fmt.Errorf("proxy did not load version v2 within 30s: %w", context.DeadlineExceeded)), transientClass},
		{"written version does not verify", transient(errors.New("the version as written does not verify: load snapshot v2: config/a.json: sha256 ab, manifest says cd")), transientClass},
		{"content does not match its hash", errors.New("download v2: config/a.json: sha256 ab, manifest says cd (corrupted in transit?)"), deterministicClass},
		{"manifest over the limits", errors.New(`manifest of version "v2": total size 300 MiB over the limit`), deterministicClass},
		{"proxy refused the version", errors.New("proxy refused version v2: extension x has no backend"), deterministicClass},
		{"version name reused", errors.New("write snapshot v2: this version is current with a different manifest"), deterministicClass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err); got != tt.want {
				t.Fatalf("classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// After the server ends a stream on purpose (a rollout of the controller,
// a token's expiry) the agent reconnects within the first backoff step,
// whatever failures came before; after any other end the backoff goes on.
func TestReconnectBackoffStartsOverAfterGracefulEnd(t *testing.T) {
	const initial, longest = 10 * time.Millisecond, time.Hour
	tests := []struct {
		name       string
		err        error
		lasted     time.Duration
		startsOver bool
	}{
		{"server shutting down", fmt.Errorf("command channel: %w", status.Error(codes.Unavailable, agentv1.EndShuttingDown)), time.Second, true},
		{"token expired", fmt.Errorf("command channel: %w", status.Error(codes.Unavailable, agentv1.EndTokenExpired)), time.Second, true},
		{"healthy for longer than the longest wait", fmt.Errorf("command channel: %w", status.Error(codes.Unavailable, "connection reset")), 2 * time.Hour, true},
		{"connection refused", fmt.Errorf("open command channel: %w", status.Error(codes.Unavailable, "connection refused")), 0, false},
		{"refused by the server", fmt.Errorf("command channel: %w", status.Error(codes.Unauthenticated, agentv1.EndShuttingDown)), time.Second, false},
		{"not a gRPC error", errors.New("read token file: no such file"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &backoff{initial: initial, max: longest, attempt: 30}
			d := b.after(tt.err, false, tt.lasted)
			if tt.startsOver && d > initial {
				t.Fatalf("waits %s after 30 failures, want at most the first step %s", d, initial)
			}
			if !tt.startsOver && b.attempt != 31 {
				t.Fatalf("backoff started over (attempt %d)", b.attempt)
			}
		})
	}
}
