//go:build unix

package policies

import "syscall"

// processCPU returns the CPU time (user + system) of the whole process, in
// nanoseconds: garbage collection on other cores counts too.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
