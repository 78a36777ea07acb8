package tracing

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpguts"
)

// Options are the tracing flags. An empty Endpoint means tracing is off.
type Options struct {
	// Endpoint is the OTLP collector's gRPC address, host:port.
	Endpoint string
	// Insecure sends spans without TLS (h2c); TLS is the default.
	Insecure bool
	// CAFile verifies the collector's certificate; the system's roots
	// when empty.
	CAFile string
	// Headers are sent with every export (a collector's or vendor's
	// credentials, a tenant ID).
	Headers map[string]string
	// Attrs are resource attributes every span of the process carries.
	Attrs map[string]string
}

// AddFlags adds the tracing flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "otlp-endpoint", o.Endpoint,
		"OpenTelemetry collector's OTLP gRPC address (host:port, e.g. otel-collector.monitoring:4317) to send traces to; empty: tracing is off")
	fs.BoolVar(&o.Insecure, "otlp-insecure", o.Insecure,
		"send traces to --otlp-endpoint without TLS (plaintext HTTP/2); only for a collector on the same node or in development")
	fs.StringVar(&o.CAFile, "otlp-ca-file", o.CAFile,
		"PEM file of the CA that signed the collector's certificate; default: the system's roots")
	fs.StringToStringVar(&o.Headers, "otlp-headers", o.Headers,
		"headers sent with every export, as key=value pairs separated by commas (e.g. authorization=Bearer x)")
	fs.StringToStringVar(&o.Attrs, "otlp-attrs", o.Attrs,
		"resource attributes of every span, as key=value pairs separated by commas (e.g. k8s.cluster.name=prod)")
}

// Enabled reports whether the flags ask for tracing.
func (o *Options) Enabled() bool { return o.Endpoint != "" }

// Validate reports every tracing flag that cannot work, joined; nil when
// they can.
func (o *Options) Validate() error {
	if !o.Enabled() {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--otlp-insecure", o.Insecure}, {"--otlp-ca-file", o.CAFile != ""}, {"--otlp-headers", len(o.Headers) > 0}, {"--otlp-attrs", len(o.Attrs) > 0}} {
			if f.set {
				return fmt.Errorf("%s needs --otlp-endpoint: name the collector, e.g. --otlp-endpoint otel-collector.monitoring:4317", f.name)
			}
		}
		return nil
	}
	var errs []error
	if err := checkEndpoint(o.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if o.Insecure && o.CAFile != "" {
		errs = append(errs, errors.New("--otlp-insecure and --otlp-ca-file contradict each other: drop --otlp-insecure to verify the collector with the CA"))
	}
	if o.CAFile != "" {
		if _, err := os.Stat(o.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("--otlp-ca-file: %w", err))
		}
	}
	for _, name := range sortedKeys(o.Headers) {
		if err := checkHeader(name, o.Headers[name]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedKeys(o.Attrs) {
		if k == "" {
			errs = append(errs, errors.New("--otlp-attrs: an attribute has no key: write key=value, e.g. k8s.cluster.name=prod"))
		}
	}
	return errors.Join(errs...)
}

// checkEndpoint accepts host:port, as Argo CD's --otlp-address does.
func checkEndpoint(ep string) error {
	if strings.Contains(ep, "://") {
		return fmt.Errorf("--otlp-endpoint %q: give host:port without a scheme (e.g. otel-collector.monitoring:4317); TLS is the default, --otlp-insecure turns it off", ep)
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("--otlp-endpoint %q: give host:port, e.g. otel-collector.monitoring:4317", ep)
	}
	return nil
}

// checkHeader refuses a header that is not sendable or that the gRPC
// protocol itself owns.
func checkHeader(name, value string) error {
	lower := strings.ToLower(name)
	switch {
	case !httpguts.ValidHeaderFieldName(name):
		return fmt.Errorf("--otlp-headers: %q is not a header name: write name=value pairs, e.g. authorization=Bearer x", name)
	case !httpguts.ValidHeaderFieldValue(value):
		return fmt.Errorf("--otlp-headers: the value of %q holds a character a header cannot carry", name)
	case lower == "content-type" || lower == "te" || lower == "user-agent" || strings.HasPrefix(lower, "grpc-"):
		return fmt.Errorf("--otlp-headers: %q is set by the gRPC protocol itself: remove it", name)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
