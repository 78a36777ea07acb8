//go:build linux

package agentchannel

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/agent/client"
)

var profileDir = flag.String("agentbench.cpuprofile", "",
	"directory for CPU profiles of the agent server process, one per measured phase of the agents=1000 runs")

var protoDecode = flag.Bool("agentbench.proto-decode", false,
	"lean agents decode packed content as protobuf messages instead of taking it from gRPC's buffers (client.ContentCodec), as before issue 27")

var columns = flag.Bool("agentbench.columns", true,
	"lean agents name the columns capability and take a full manifest as columns, as agent/client does; false: as a per-file manifest, as before issue 27's fourth session")

var leanWindow = flag.Int("agentbench.lean-window", client.StreamWindowBytes,
	"the lean agents' static HTTP/2 stream window in bytes (the connection's is twice it), outside the light scale fleets; the default is agent/client's")

func TestMain(m *testing.M) {
	raiseFileLimit()
	if os.Getenv(envRole) == roleServer {
		// Re-executed by startServerProc: be the agent server.
		os.Exit(serverMain())
	}
	// Servers and agents start inside the benchmarks, so `go test` without
	// -bench starts nothing.
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// raiseFileLimit lifts the soft limit on open files to the hard one: a
// thousand agents hold a thousand connections on each side, plus files.
func raiseFileLimit() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			fmt.Fprintln(os.Stderr, "agentchannel bench: cannot raise the open-file limit:", err)
		}
	}
}

// checkFileLimit fails if this process may not open n files: one
// connection per agent, on each side (the server is a child with the same
// limit).
func checkFileLimit(n int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur < uint64(n) {
		return fmt.Errorf("the open-file limit is %d; %d agents need %d (raise the hard limit: ulimit -Hn)", l.Cur, n-100, n)
	}
	return nil
}
