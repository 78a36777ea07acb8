package devcli

import (
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/agentcli"
	"github.com/gatehouse-dev/gatehouse/controlplane/controllercli"
	"github.com/gatehouse-dev/gatehouse/proxy/proxycli"
)

// partAddresses are where the parts of one run find their input and each
// other.
type partAddresses struct {
	dir    string // the directory of YAML the controller builds from
	volume string // the agent writes it, the proxy reads it
	listen string // the proxy's extension requests
	agent  string // the controller's gRPC endpoint
	debug  string // the controller's agent registry
	admin  string // the proxy's admin endpoint
	state  string // the proxy's /state on admin, the agent's --confirm-url
}

// newPartOptions are the options of the controller, the proxy and the agent
// of one run: each command's defaults with the fields a run sets, checked
// by the command's own Validate.
func newPartOptions(a partAddresses, certs *devCerts, tokenFile, staticFile string) (*controllercli.Options, *proxycli.Options, *agentcli.Options, error) {
	co := controllercli.NewOptions()
	co.Source = "dir:" + a.dir
	co.Agents.BindAddress, co.Agents.DebugAddress = a.agent, a.debug
	co.Agents.CertFile, co.Agents.KeyFile, co.Agents.StaticTokenFile = certs.cert, certs.key, staticFile
	co.MetricsBindAddress, co.ProbeBindAddress = "0", "0"
	co.Complete(nil)

	po := proxycli.NewOptions()
	po.SnapshotDir, po.Listen, po.AdminListen, po.HealthListen = a.volume, a.listen, a.admin, "0"
	// The demo SSO issuer is http:// on loopback.
	po.AllowInsecureOIDC = true
	po.ShutdownTimeout = 5 * time.Second
	// Every request the developer sends shows in the log, with its answer.
	po.AccessLog = true

	ao := agentcli.NewOptions()
	ao.Server, ao.CAFile, ao.TokenFile, ao.Root = a.agent, certs.ca, tokenFile, a.volume
	ao.ConfirmURL, ao.AdminAddress = a.state, "127.0.0.1:0"
	ao.AgentID, ao.PodName, ao.PodNamespace, ao.PodUID = devAgentID, devAgentID, "local", devAgentID

	if err := errors.Join(co.Validate(), po.Validate(), ao.Validate()); err != nil {
		return nil, nil, nil, fmt.Errorf("the parts' flags (a bug of gatehouse dev): %w", err)
	}
	return co, po, ao, nil
}
