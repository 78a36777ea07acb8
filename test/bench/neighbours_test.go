package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// neighbours are the kube-apiservers and etcds this benchmark process
// started (envtest runs them as its children). On two shared cores they
// are the controller's neighbours: after a controller lists 100,000
// Applications, the API server collects the garbage of that list (a heap
// of gigabytes) for seconds, on the cores the measured controller needs.
type neighbours []int

// findNeighbours lists the running children of this process named
// kube-apiserver or etcd.
func findNeighbours() (neighbours, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var out neighbours
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, _, err := procStat(pid)
		if err != nil || ppid != self {
			continue // gone meanwhile, or not ours
		}
		if comm == "kube-apiserver" || comm == "etcd" {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no kube-apiserver or etcd among this process's children")
	}
	return out, nil
}

// procStat reads a process's command name, parent and state from
// /proc/<pid>/stat.
func procStat(pid int) (comm string, ppid int, state byte, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, err
	}
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ppid, err = strconv.Atoi(fields[1])
	return s[open+1 : end], ppid, fields[0][0], err
}

// stop stops every neighbour (SIGSTOP) and returns once each is stopped;
// the returned function continues them. A controller keeps its watches
// open meanwhile: to it the cluster is only quiet.
func (n neighbours) stop() (cont func(), err error) {
	cont = func() {
		for _, pid := range n {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	for _, pid := range n {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			cont()
			return nil, fmt.Errorf("stop process %d: %w", pid, err)
		}
	}
	for _, pid := range n {
		if err := waitStopped(pid); err != nil {
			cont()
			return nil, err
		}
	}
	return cont, nil
}

// waitStopped waits until the kernel reports pid stopped: SIGSTOP is
// delivered asynchronously, and a measurement must not start before.
func waitStopped(pid int) error {
	for range 10000 {
		_, _, state, err := procStat(pid)
		if err != nil {
			return fmt.Errorf("wait for process %d to stop: %w", pid, err)
		}
		if state == 'T' || state == 't' {
			return nil
		}
		time.Sleep(100 * time.Microsecond) // polling the kernel's state: no event to wait on
	}
	return fmt.Errorf("process %d did not stop", pid)
}

// cpu is the neighbours' CPU time so far.
func (n neighbours) cpu() time.Duration {
	var total time.Duration
	for _, pid := range n {
		if c, err := testkit.CPUOf(pid); err == nil {
			total += c
		}
	}
	return total
}
