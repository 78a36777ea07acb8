//go:build !linux

package testkit

import (
	"errors"
	"time"
)

var errNotLinux = errors.New("process statistics need Linux /proc")

// RusageCPU is unavailable off Linux.
func RusageCPU(int) time.Duration { return 0 }

// MemOf is unavailable off Linux.
func MemOf(string) (rss, hwm int64, err error) { return 0, 0, errNotLinux }

// CPUOf is unavailable off Linux.
func CPUOf(int) (time.Duration, error) { return 0, errNotLinux }

// LoadAvg is unavailable off Linux.
func LoadAvg() float64 { return -1 }
