//go:build linux

package agentchannel

import (
	"runtime"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// procStats is a process's view of itself at one moment.
type procStats struct {
	CPU        time.Duration `json:"cpu"` // user + system, getrusage
	RSSBytes   int64         `json:"rss"`
	HWMBytes   int64         `json:"hwm"` // peak RSS
	HeapInuse  uint64        `json:"heapInuse"`
	HeapAlloc  uint64        `json:"heapAlloc"`
	GoSys      uint64        `json:"goSys"`
	NumGC      uint32        `json:"numGC"`
	TotalAlloc uint64        `json:"totalAlloc"`
	StackInuse uint64        `json:"stackInuse"`
	// HeapIdle - HeapReleased is heap the runtime holds but does not use.
	HeapIdle     uint64 `json:"heapIdle"`
	HeapReleased uint64 `json:"heapReleased"`
	Goroutines   int    `json:"goroutines"`
}

// selfStats reads this process's CPU time, RSS and Go heap.
func selfStats() (procStats, error) {
	st := procStats{CPU: testkit.RusageCPU(syscall.RUSAGE_SELF)}
	var err error
	if st.RSSBytes, st.HWMBytes, err = testkit.MemOf("self"); err != nil {
		return st, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse, st.HeapAlloc, st.GoSys, st.NumGC, st.TotalAlloc = ms.HeapInuse, ms.HeapAlloc, ms.Sys, ms.NumGC, ms.TotalAlloc
	st.StackInuse, st.HeapIdle, st.HeapReleased = ms.StackInuse, ms.HeapIdle, ms.HeapReleased
	st.Goroutines = runtime.NumGoroutine()
	return st, nil
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func mbu(n uint64) float64 { return float64(n) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
