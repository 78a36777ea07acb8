package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
)

// logOptions are the logging flags every long-running subcommand shares.
type logOptions struct {
	Level  string
	Format string
}

func (o *logOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "json", "log format: json or text")
}

func (o *logOptions) Validate() []error {
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

func (o *logOptions) handler(w io.Writer) slog.Handler {
	var level slog.Level
	_ = level.UnmarshalText([]byte(o.Level))
	ho := &slog.HandlerOptions{Level: level}
	if o.Format == "text" {
		return slog.NewTextHandler(w, ho)
	}
	return slog.NewJSONHandler(w, ho)
}
