package logflags

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

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
