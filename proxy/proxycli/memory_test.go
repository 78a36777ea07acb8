package proxycli

import (
	"runtime/debug"
	"testing"
)

func TestMemorySettings(t *testing.T) {
	limit0, gc0 := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc0)
	defer func() { debug.SetMemoryLimit(limit0); debug.SetGCPercent(gc0) }()
	tests := []struct {
		name                string
		env                 map[string]string
		limitGiven, gcGiven bool
		wantLimit, wantGOGC int64
	}{
		{"defaults", nil, false, false, 80 << 20, 300},
		{"the environment wins over defaults", map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "150"}, false, false, -1, -1},
		{"flags win over the environment", map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "150"}, true, true, 80 << 20, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tt.env["GOMEMLIMIT"])
			t.Setenv("GOGC", tt.env["GOGC"])
			debug.SetMemoryLimit(limit0)
			debug.SetGCPercent(gc0)
			applyMemorySettings(DefaultMemoryLimit, tt.limitGiven, DefaultGCPercent, tt.gcGiven)
			if got := debug.SetMemoryLimit(-1); tt.wantLimit >= 0 && got != tt.wantLimit || tt.wantLimit < 0 && got != limit0 {
				t.Errorf("memory limit %d", got)
			}
			got := debug.SetGCPercent(gc0)
			if tt.wantGOGC >= 0 && int64(got) != tt.wantGOGC || tt.wantGOGC < 0 && got != gc0 {
				t.Errorf("GOGC %d", got)
			}
		})
	}
}
