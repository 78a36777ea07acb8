package devcli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestVersionLinesKeepOneLinePerVersionAndEveryProblem(t *testing.T) {
	tests := []struct {
		level   slog.Level
		msg     string
		verbose bool
		shown   bool
	}{
		{slog.LevelInfo, "snapshot built", false, true},
		{slog.LevelInfo, "snapshot served", false, true},
		{slog.LevelInfo, "snapshot applied", false, true},
		{slog.LevelInfo, "snapshot published", false, false},
		{slog.LevelInfo, "agent connected", false, false},
		{slog.LevelWarn, "agent rejected a snapshot", false, true},
		{slog.LevelError, "source directory not loaded", false, true},
		{slog.LevelInfo, "agent connected", true, true},
		{slog.LevelDebug, "snapshot built", false, false}, // below the handler's level
	}
	for _, tt := range tests {
		var b bytes.Buffer
		log := slog.New(versionLines{slog.NewTextHandler(&b, nil), tt.verbose}).With("part", "agent")
		log.Log(t.Context(), tt.level, tt.msg, "version", "v1")
		if got := strings.Contains(b.String(), tt.msg); got != tt.shown {
			t.Errorf("%s %q (verbose %v): shown %v, want %v", tt.level, tt.msg, tt.verbose, got, tt.shown)
		}
		if tt.shown && !strings.Contains(b.String(), "part=agent") {
			t.Errorf("%q lost the part: %s", tt.msg, b.String())
		}
	}
}
