//go:build linux

package agentchannel

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	st := procStats{CPU: rusageCPU(syscall.RUSAGE_SELF)}
	var err error
	if st.RSSBytes, st.HWMBytes, err = memOf("self"); err != nil {
		return st, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse, st.HeapAlloc, st.GoSys, st.NumGC, st.TotalAlloc = ms.HeapInuse, ms.HeapAlloc, ms.Sys, ms.NumGC, ms.TotalAlloc
	st.StackInuse, st.HeapIdle, st.HeapReleased = ms.StackInuse, ms.HeapIdle, ms.HeapReleased
	st.Goroutines = runtime.NumGoroutine()
	return st, nil
}

// rusageCPU is user + system time of the process (RUSAGE_SELF) or of the
// calling thread (RUSAGE_THREAD), at microsecond resolution.
func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memOf returns VmRSS and VmHWM of /proc/<pid>/status in bytes.
func memOf(pid string) (rss, hwm int64, err error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%s/status %s: %w", pid, key, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// cpuOf returns the user + system CPU time of process pid from
// /proc/<pid>/stat (clock ticks of 10 ms).
func cpuOf(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// loadAvg is the 1-minute load average, from /proc/loadavg.
func loadAvg() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _, _ := strings.Cut(string(raw), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return -1
	}
	return v
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func mbu(n uint64) float64 { return float64(n) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
