package agentchannel

import (
	"syscall"
	"testing"
)

// limitFileSize lowers this process's RLIMIT_FSIZE to n bytes, so that the
// kernel fails any write that would make a file larger with EFBIG: a full
// disk for one file, without root, a tmpfs or a hook in the code under
// test. The Go runtime ignores the SIGXFSZ that comes with it. The limit
// holds for the whole process until the returned func (also run at cleanup)
// restores it, so only tests that do not run in parallel may use it.
func limitFileSize(t *testing.T, n uint64) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatalf("set RLIMIT_FSIZE: %v", err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Errorf("restore RLIMIT_FSIZE: %v", err)
		}
	}
	t.Cleanup(restore)
	return restore
}
