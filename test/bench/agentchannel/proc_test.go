//go:build linux

package agentchannel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// serverProc is the agent server child process, seen from the benchmark.
type serverProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string
	pid  int
	dir  string
	done chan struct{}
}

// startServerProc re-executes this test binary as the agent server,
// accepting tokens benchToken(0..tokens-1), with the PKI in dir.
func startServerProc(dir string, tokens int) (*serverProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+roleServer, envDir+"="+dir, fmt.Sprintf("%s=%d", envTokens, tokens))
	if extra := os.Getenv(envServerEnv); extra != "" {
		cmd.Env = append(cmd.Env, strings.Fields(extra)...)
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, in: in, out: bufio.NewScanner(out), dir: dir, done: make(chan struct{})}
	p.out.Buffer(make([]byte, 1<<20), 16<<20)
	go func() { _ = cmd.Wait(); close(p.done) }()
	r, err := p.read()
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("agent server did not start: %w", err)
	}
	p.addr, p.pid = r.Addr, r.Pid
	return p, nil
}

func (p *serverProc) read() (reply, error) {
	if !p.out.Scan() {
		if err := p.out.Err(); err != nil {
			return reply{}, err
		}
		return reply{}, errors.New("agent server exited")
	}
	var r reply
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		return reply{}, fmt.Errorf("agent server answered %q: %w", p.out.Text(), err)
	}
	if r.Error != "" {
		return r, errors.New("agent server: " + r.Error)
	}
	return r, nil
}

// do sends one command and returns the answer.
func (p *serverProc) do(format string, args ...any) (reply, error) {
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		return reply{}, fmt.Errorf("agent server: %w", err)
	}
	return p.read()
}

func (p *serverProc) stats() (childStats, error) {
	r, err := p.do("stats")
	if err != nil || r.Stats == nil {
		return childStats{}, errors.Join(err, errors.New("no stats"))
	}
	return *r.Stats, nil
}

// stop closes stdin (the server shuts down gracefully) and kills it if it
// has not exited within 30 s.
func (p *serverProc) stop() {
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail is the end of the server's log, for error messages.
func (p *serverProc) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
