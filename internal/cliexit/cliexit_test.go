package cliexit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStatus(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		err        error
		wantCode   int
		wantStderr string
	}{
		{"success", context.Background(), nil, 0, ""},
		{"a status asked for", context.Background(), Error{Code: 1}, 1, ""},
		{"a wrapped status", context.Background(), fmt.Errorf("x: %w", Error{Code: 3}), 3, ""},
		{"an error", context.Background(), errors.New("no such file"), 2, "gatehouse: no such file\n"},
		{"interrupted", cancelled, fmt.Errorf("read: %w", context.Canceled), 2, "gatehouse: interrupted\n"},
		{"cancelled, but not by the caller", context.Background(), context.Canceled, 2, "gatehouse: context canceled\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := Status(tt.ctx, "gatehouse", tt.err, &stderr); code != tt.wantCode || stderr.String() != tt.wantStderr {
				t.Errorf("Status = %d, stderr %q; want %d, %q", code, stderr.String(), tt.wantCode, tt.wantStderr)
			}
		})
	}
}
