//go:build unix

package policies

import (
	"os"
	"syscall"
)

// limitMemory caps this process's data segment (RLIMIT_DATA: since Linux
// 4.7 every private writable mapping, so the whole Go heap, and not the
// address space the runtime only reserves, which RLIMIT_AS would count at
// a gigabyte before the first allocation), and asks the kernel's OOM killer
// to take this process before its parent.
func limitMemory(bytes int64) error {
	// Best effort: raising one's own score needs no privilege, and a
	// kernel without the file still has the rlimit.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	lim := &syscall.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	return syscall.Setrlimit(syscall.RLIMIT_DATA, lim)
}
