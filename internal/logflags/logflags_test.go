package logflags

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // "" means valid
		want    string // in what a warning logs as
	}{
		{nil, "", `"level":"WARN"`},
		{[]string{"--log-format=text"}, "", "level=WARN"},
		{[]string{"--log-level=error"}, "", ""},
		{[]string{"--log-level=loud"}, "--log-level", ""},
		{[]string{"--log-format=yaml"}, "--log-format", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			var o Options
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				// One fault: the joined error is one line.
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			slog.New(o.Handler(&out)).Warn("w")
			if tt.want == "" && out.Len() != 0 || !strings.Contains(out.String(), tt.want) {
				t.Errorf("a warning logged %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// A duration reads the same in both formats, as Go spells it, at the top
// level, in a group and under a logger's own attributes.
func TestDurationsReadAsGoSpellsThem(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			o := Options{Level: "info", Format: format}
			log := slog.New(o.Handler(&out)).With("retryIn", 2*time.Minute)
			log.Info("m", "took", 1500*time.Millisecond, slog.Group("g", slog.Duration("compile", 250*time.Microsecond)),
				"nanos", time.Duration(7))
			var want []string
			if format == "json" {
				var got map[string]any
				if err := json.Unmarshal(out.Bytes(), &got); err != nil {
					t.Fatalf("%v: %s", err, out.String())
				}
				if got["took"] != "1.5s" || got["retryIn"] != "2m0s" || got["nanos"] != "7ns" ||
					got["g"].(map[string]any)["compile"] != "250µs" {
					t.Fatalf("durations logged as %s", out.String())
				}
				return
			}
			want = []string{"took=1.5s", "retryIn=2m0s", "g.compile=250µs", "nanos=7ns"}
			for _, w := range want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("%q lacks %q", out.String(), w)
				}
			}
		})
	}
}
