// Package logflags owns the logging flags of Gatehouse's long-running
// commands (--log-level, --log-format) and the slog handler they select:
// the controller, the agent and the proxy spell them, check them and log
// the same way, and the slim binaries link nothing else of ours for them.
package logflags

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
)

// Options are the logging flags.
type Options struct {
	Level  string
	Format string
}

func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "json", "log format: json or text")
}

// Validate reports every flag that cannot work, joined; nil when they can.
func (o *Options) Validate() error {
	var errs []error
	var l slog.Level
	if err := l.UnmarshalText([]byte(o.Level)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.Level))
	}
	if o.Format != "json" && o.Format != "text" {
		errs = append(errs, fmt.Errorf("--log-format %q: use json or text", o.Format))
	}
	return errors.Join(errs...)
}

// Handler is the slog handler the flags ask for, writing to w.
func (o *Options) Handler(w io.Writer) slog.Handler {
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.Level))
	ho := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	if o.Format == "text" {
		return slog.NewTextHandler(w, ho)
	}
	return slog.NewJSONHandler(w, ho)
}

// readableDuration writes a time.Duration as Go spells it ("1.5s",
// "250ms"), in both formats: slog's JSON handler would write integer
// nanoseconds, which nobody reads and which differs from the text format.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
