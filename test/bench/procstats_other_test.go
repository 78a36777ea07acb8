//go:build !linux

package bench

import (
	"errors"
	"time"
)

var errNotLinux = errors.New("process statistics are read from /proc and getrusage: Linux only")

func selfStats() (procStats, error) { return procStats{}, errNotLinux }

func memOf(string) (rss, hwm int64, err error) { return 0, 0, errNotLinux }

func cpuOf(int) (time.Duration, error) { return 0, errNotLinux }
