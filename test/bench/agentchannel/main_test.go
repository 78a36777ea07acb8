//go:build linux

package agentchannel

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"testing"
)

var profileDir = flag.String("agentbench.cpuprofile", "",
	"directory for CPU profiles of the agent server process, one per measured phase of the agents=1000 runs")

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
