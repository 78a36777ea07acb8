//go:build linux

package bench

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

// selfStats reads this process's CPU time, RSS and Go heap.
func selfStats() (procStats, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return procStats{}, err
	}
	st := procStats{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	var err error
	if st.RSSBytes, st.HWMBytes, err = memOf("self"); err != nil {
		return st, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapInuse, st.HeapAlloc, st.GoSys, st.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.Sys, ms.NumGC
	st.TotalAlloc, st.Mallocs = ms.TotalAlloc, ms.Mallocs
	return st, nil
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
// /proc/<pid>/stat, in clock ticks of 10 ms.
func cpuOf(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime (fields 14 and 15)
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
