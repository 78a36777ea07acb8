package devcli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/demo"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
)

// Options are the flags of `gatehouse dev`; Dir, IssuerKey and
// Namespace are `gatehouse dev token`'s too.
type Options struct {
	Dir          string
	IssuerKey    string
	Namespace    string
	Listen       string
	Tour         bool
	Verbose      bool
	StartTimeout time.Duration
	Log          logflags.Options
	// Tracing is passed to the controller and the proxy.
	Tracing tracing.Options

	// version is the build's, which the agent reports.
	version string
}

// NewOptions returns dev's defaults: what its flags are before any is
// given; version is the build's.
func NewOptions(version string) *Options {
	o := &Options{version: version}
	fs := pflag.NewFlagSet("dev", pflag.ContinueOnError)
	o.AddPersistentFlags(fs)
	o.AddFlags(fs)
	return o
}

// AddPersistentFlags adds the flags dev shares with dev token to fs.
func (o *Options) AddPersistentFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", "examples/", "directory of Kubernetes YAML to run from (Argo CD's settings, Applications, AppProjects, extensions, policy, the tour); edits take effect at once")
	fs.StringVar(&o.IssuerKey, "issuer-key", demo.DefaultKeyFile(), "private key of the demo SSO issuer, created if missing; gatehouse dev and gatehouse dev token share it")
	fs.StringVar(&o.Namespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in, for objects of --dir that name none")
}

// AddFlags adds the flags of dev alone to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address the proxy serves extension requests on; loopback only (port 0: any free port)")
	fs.BoolVar(&o.Tour, "tour", false, "run the tour and exit: 0 if every step went as expected, 1 if not")
	fs.BoolVar(&o.Verbose, "verbose", false, "log every part's information lines, not only one line per version and part")
	fs.DurationVar(&o.StartTimeout, "start-timeout", time.Minute, "how long the parts may take to serve their first version")
	o.Log.AddFlags(fs)
	o.Tracing.AddFlags(fs)
	// A person reads gatehouse dev's log; machines read the parts' own.
	o.Log.Format = "text"
	fs.Lookup("log-format").DefValue = "text"
}

// Validate reports every flag that cannot work, each on its own line; nil
// when they can.
func (o *Options) Validate() error {
	errs := append([]error{o.Log.Validate(), o.Tracing.Validate()}, o.validateShared()...)
	if _, port, err := net.SplitHostPort(o.Listen); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--listen %q: want host:port, such as 127.0.0.1:8080", o.Listen))
	} else if !demo.IsLoopback(o.Listen) {
		errs = append(errs, fmt.Errorf("--listen %q: gatehouse dev serves on loopback only (its SSO issuer mints any identity): use 127.0.0.1:PORT", o.Listen))
	}
	if o.StartTimeout <= 0 {
		errs = append(errs, errors.New("--start-timeout must be positive"))
	}
	return errors.Join(errs...)
}

func (o *Options) validateShared() []error {
	var errs []error
	if info, err := os.Stat(o.Dir); err != nil || !info.IsDir() {
		errs = append(errs, fmt.Errorf("--dir %s: not a directory: give the directory of YAML to run from, such as examples/", o.Dir))
	}
	if o.IssuerKey == "" {
		errs = append(errs, errors.New("--issuer-key: there is no user cache directory to keep the demo issuer's key in: give a file"))
	}
	return errs
}
