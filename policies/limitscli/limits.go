package limitscli

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/memflags"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Options are the flags every command that accepts a policy shares (the
// controller, snapshot, admit, policy test|build|eval): the capabilities it
// is compiled with and the memory budget of the child its checks run in.
type Options struct {
	CapabilitiesFile string
	CheckMemory      string
}

// NewOptions returns the defaults, as AddFlags sets them: OPA's
// capabilities less the denied builtins, and policies.DefaultSandboxMemory.
func NewOptions() *Options {
	return &Options{CheckMemory: defaultCheckMemory()}
}

func defaultCheckMemory() string {
	return fmt.Sprintf("%dMiB", policies.DefaultSandboxMemory>>20)
}

// AddCapabilitiesFlag adds --capabilities alone, for commands that only
// evaluate (policy eval: decisions run in process under the engine's
// bound, as in the proxy).
func (o *Options) AddCapabilitiesFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.CapabilitiesFile, "capabilities", "", capabilitiesUsage())
}

func capabilitiesUsage() string {
	return "OPA capabilities file (opa capabilities --current writes one) listing the builtins policies may call; default: OPA's without the builtins that reach the network or the host (" +
		strings.Join(policies.DeniedBuiltins(), ", ") + "); see docs/policy-guide.md before opening them"
}

// AddFlags adds the flags; capabilitiesFlag is their name in this command
// (--policy-capabilities-file for the controller, --capabilities where the
// policy is the command's subject, as opa build --capabilities).
func (o *Options) AddFlags(fs *pflag.FlagSet, capabilitiesFlag, memoryFlag string) {
	fs.StringVar(&o.CapabilitiesFile, capabilitiesFlag, "", capabilitiesUsage())
	fs.StringVar(&o.CheckMemory, memoryFlag, defaultCheckMemory(),
		"memory budget of the child process that compiles, smoke-tests and runs the tests of a policy before it is accepted (KiB, MiB, GiB or bytes): a policy that needs more is refused")
}

// Validate reports a memory budget that is no size, or too small for the
// child to start.
func (o *Options) Validate() error {
	_, err := o.budget()
	return err
}

func (o *Options) budget() (int64, error) {
	budget, err := memflags.ParseBytes(o.CheckMemory)
	if err != nil || budget < 32<<20 {
		return 0, fmt.Errorf("policy check memory %q: want a size of at least 32MiB (the Go runtime needs some), such as 160MiB", o.CheckMemory)
	}
	return budget, nil
}

// Capabilities reads the capabilities file (nil: the default set).
func (o *Options) Capabilities() (*policies.Capabilities, error) {
	if o.CapabilitiesFile == "" {
		return nil, nil
	}
	return policies.ReadCapabilitiesFile(o.CapabilitiesFile)
}

// Limits reads the capabilities file and returns the limits to check
// policies under: in a child process that is this binary running
// SandboxCommand.
func (o *Options) Limits() (policies.Limits, error) {
	var l policies.Limits
	c, err := o.Capabilities()
	if err != nil {
		return l, err
	}
	l.Capabilities = c
	budget, err := o.budget()
	if err != nil {
		return l, err
	}
	exe, err := selfExecutable()
	if err != nil {
		return l, fmt.Errorf("find this binary to run policy checks in a child process: %w", err)
	}
	l.Sandbox = &policies.Sandbox{Command: []string{exe, SandboxCommand}, MemoryBytes: budget}
	return l, nil
}

// selfExecutable is the running binary: /proc/self/exe on Linux, which
// stays this binary even if the file is replaced on disk.
func selfExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}
