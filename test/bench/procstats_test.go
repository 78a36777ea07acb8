package bench

import (
	"runtime"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// selfStats reads this process's CPU time, RSS and Go heap.
func selfStats() (procStats, error) {
	st := procStats{CPU: testkit.RusageCPU(syscall.RUSAGE_SELF)}
	var err error
	if st.RSSBytes, st.HWMBytes, err = testkit.MemOf("self"); err != nil {
		return st, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse, st.HeapAlloc, st.GoSys, st.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.Sys, ms.NumGC
	st.TotalAlloc, st.Mallocs = ms.TotalAlloc, ms.Mallocs
	return st, nil
}
