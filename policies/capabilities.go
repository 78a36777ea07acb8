package policies

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// CapabilitiesFile is where a snapshot's policy directory carries the
// capabilities the controller accepted the policy with, when an
// administrator gave a file (--policy-capabilities-file): the proxy compiles
// the policy with the same set. Without it, both use the default capabilities.
// Only the snapshot's policy directory is read for it (LoadOptions): a
// bundle cannot widen its own capabilities.
const CapabilitiesFile = ".capabilities.json"

// DeniedBuiltins are the builtins of OPA that reach outside the policy's
// inputs: the network, the host's files, or the process's environment.
// A policy that can call them turns the controller, the webhook and every
// proxy into a client of any server the policy names (http.send, and the
// remote $ref of a JSON schema), a DNS resolver (net.lookup_ip_addr), a
// reader of the host's files (a schema's file:// $ref) or of the process's
// environment and configuration (opa.runtime). Decisions and tests must
// depend on their input and data alone, so the default capabilities leave them
// out and the compiler refuses a call to any of them, naming the builtin,
// file and line. The clock (time.now_ns), randomness (rand.intn,
// uuid.rfc4122) and trace/print output stay: they reach nothing.
var deniedBuiltins = []string{
	"http.send",          // any request to any server
	"net.lookup_ip_addr", // DNS queries from the caller's network position
	"opa.runtime",        // the process's environment variables and config
	"json.match_schema",  // a schema's $ref loads file:// and http(s):// URLs
	"json.verify_schema", // likewise
}

// DeniedBuiltins returns the builtins the default capabilities leaves out.
func DeniedBuiltins() []string { return slices.Clone(deniedBuiltins) }

// Capabilities is the set of builtins (and language features) every policy
// is compiled against: by the proxy's engine, the controller, the webhook
// and the CLI alike. The zero value and nil are the default capabilities.
type Capabilities struct {
	// raw is the administrator's file as given (nil: the default set).
	raw []byte
}

// The default capabilities (the zero Capabilities, or nil) are OPA's for the
// version Gatehouse is built with, without DeniedBuiltins and with no host
// allowed to the network builtins (allow_net: []), should an administrator's
// file add one back without its own allow_net.

// ReadCapabilitiesFile reads an administrator's capabilities file in OPA's
// own format (what `opa capabilities` prints and `opa build --capabilities`
// reads). The file replaces the default set as a whole: the builtins it
// lists are the ones policies may call, allow_net included as OPA reads it
// (absent: any host).
func ReadCapabilitiesFile(path string) (*Capabilities, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy capabilities: %w", err)
	}
	c, err := ParseCapabilities(raw)
	if err != nil {
		return nil, fmt.Errorf("read policy capabilities %s: %w", path, err)
	}
	return c, nil
}

// ParseCapabilities reads a capabilities document (see
// ReadCapabilitiesFile).
func ParseCapabilities(raw []byte) (*Capabilities, error) {
	c, err := ast.LoadCapabilitiesJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not an OPA capabilities document: %w", err)
	}
	if len(c.Builtins) == 0 {
		return nil, fmt.Errorf("lists no builtins: a policy could call none (print the full set with opa capabilities --current and remove what you do not want)")
	}
	return &Capabilities{raw: slices.Clone(raw)}, nil
}

// IsDefault reports whether c is the default capabilities.
func (c *Capabilities) IsDefault() bool { return c == nil || c.raw == nil }

// JSON is the administrator's document as given (nil for the default set),
// for the snapshot's CapabilitiesFile.
func (c *Capabilities) JSON() []byte {
	if c.IsDefault() {
		return nil
	}
	return slices.Clone(c.raw)
}

// opa is the one place Gatehouse's capabilities become OPA's: every
// compiler, query and test runner of a policy takes its result. It returns
// a new value each call (OPA's compiler may keep it).
func (c *Capabilities) opa() *ast.Capabilities {
	if !c.IsDefault() {
		caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(c.raw))
		if err == nil {
			return caps
		}
		// Checked by ParseCapabilities; fail closed all the same.
		return &ast.Capabilities{AllowNet: []string{}}
	}
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(slices.Clone(caps.Builtins), func(b *ast.Builtin) bool {
		return slices.Contains(deniedBuiltins, b.Name)
	})
	caps.AllowNet = []string{}
	return caps
}

// String describes c for logs and messages.
func (c *Capabilities) String() string {
	if c.IsDefault() {
		return "Gatehouse's default capabilities (OPA's without " + strings.Join(deniedBuiltins, ", ") + ")"
	}
	return "the administrator's capabilities file"
}

// explainUndefined adds to the compiler's "undefined function X" errors
// for a builtin Gatehouse leaves out why it is, and what to do, so the
// message at kubectl apply, in a PolicyBundle's status and in CI says it.
func explainUndefined(errs ast.Errors, c *Capabilities) {
	for _, e := range errs {
		if e == nil || e.Code != ast.TypeErr {
			continue
		}
		name, ok := strings.CutPrefix(e.Message, "undefined function ")
		if !ok || !slices.Contains(deniedBuiltins, name) || !c.IsDefault() {
			continue
		}
		e.Message += ": Gatehouse policies may not call builtins that reach the network or the host (" +
			strings.Join(deniedBuiltins, ", ") + "); an administrator can allow more with a capabilities file (the controller's --policy-capabilities-file, the CLI's --capabilities; docs/policy-guide.md)"
	}
}
