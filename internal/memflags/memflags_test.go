package memflags

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"16MiB", 16 << 20, false},
		{"512KiB", 512 << 10, false},
		{"2GiB", 2 << 30, false},
		{"1000", 1000, false},
		{"0", 0, false},
		{"16MB", 0, true},
		{"-1MiB", 0, true},
		{"", 0, true},
		{"9999999999GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestApply: the flags' defaults apply unless the environment says
// otherwise, and a flag given wins over the environment; a binary without
// --gc-percent (the agent) leaves GOGC alone.
func TestApply(t *testing.T) {
	limit0, gc0 := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc0)
	defer func() { debug.SetMemoryLimit(limit0); debug.SetGCPercent(gc0) }()
	const unchanged = -1
	tests := []struct {
		name                string
		defaultGC           int
		env                 map[string]string
		args                []string
		wantLimit, wantGOGC int64
	}{
		{"defaults", 300, nil, nil, 80 << 20, 300},
		{"the environment wins over defaults", 300, map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "150"}, nil, unchanged, unchanged},
		{"flags win over the environment", 300, map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "150"},
			[]string{"--memory-limit=80MiB", "--gc-percent=300"}, 80 << 20, 300},
		{"a limit of 0 sets none", 300, nil, []string{"--memory-limit=0"}, unchanged, 300},
		{"no --gc-percent: GOGC is left alone", 0, nil, nil, 80 << 20, unchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tt.env["GOMEMLIMIT"])
			t.Setenv("GOGC", tt.env["GOGC"])
			debug.SetMemoryLimit(limit0)
			debug.SetGCPercent(gc0)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			var o Options
			o.AddFlags(fs, "80MiB", tt.defaultGC)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			o.Apply(fs)
			if got := debug.SetMemoryLimit(-1); tt.wantLimit != unchanged && got != tt.wantLimit || tt.wantLimit == unchanged && got != limit0 {
				t.Errorf("memory limit %d", got)
			}
			got := debug.SetGCPercent(gc0)
			if tt.wantGOGC != unchanged && int64(got) != tt.wantGOGC || tt.wantGOGC == unchanged && got != gc0 {
				t.Errorf("GOGC %d", got)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var o Options
	o.AddFlags(fs, "16MiB", 0)
	if err := fs.Parse([]string{"--memory-limit=16MB"}); err != nil {
		t.Fatal(err)
	}
	// One fault: the joined error is one line.
	if err := o.Validate(); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--memory-limit") {
		t.Errorf("error %v, want one naming --memory-limit", err)
	}
	if fs.Lookup("gc-percent") != nil {
		t.Error("--gc-percent added with no default")
	}
}
