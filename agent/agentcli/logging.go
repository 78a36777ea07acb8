package agentcli

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
)

// LogOptions are the logging flags of every long-running subcommand: the
// agent's here, and cmd/gatehouse's controller uses them too, so both
// binaries spell the flags and their errors the same way.
type LogOptions struct {
	Level  string
	Format string
}

func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "json", "log format: json or text")
}

func (o *LogOptions) Validate() []error {
	var errs []error
	var l slog.Level
	if err := l.UnmarshalText([]byte(o.Level)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.Level))
	}
	if o.Format != "json" && o.Format != "text" {
		errs = append(errs, fmt.Errorf("--log-format %q: use json or text", o.Format))
	}
	return errs
}

// Handler is the slog handler the flags ask for, writing to w.
func (o *LogOptions) Handler(w io.Writer) slog.Handler {
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.Level))
	ho := &slog.HandlerOptions{Level: level}
	if o.Format == "text" {
		return slog.NewTextHandler(w, ho)
	}
	return slog.NewJSONHandler(w, ho)
}
