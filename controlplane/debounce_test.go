package controlplane

import (
	"testing"
	"time"
)

func TestDebounce(t *testing.T) {
	const quiet, maxDelay = 100 * time.Millisecond, time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		changes []time.Duration // since the first
		due     time.Duration   // since the first
	}{
		{"one change settles Quiet after it", []time.Duration{0}, quiet},
		{"each change within Quiet waits Quiet more", []time.Duration{0, ms(50), ms(120)}, ms(220)},
		{"a steady stream ships MaxDelay after the first", []time.Duration{0, ms(90), ms(180), ms(270), ms(360), ms(450), ms(540), ms(630), ms(720), ms(810), ms(900), ms(990)}, maxDelay},
		{"a change just before MaxDelay does not push it", []time.Duration{0, ms(950)}, maxDelay},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := debounce{quiet: quiet, maxDelay: maxDelay}
			for _, c := range tt.changes {
				d.change(t0.Add(c))
			}
			if got := d.due().Sub(t0); got != tt.due {
				t.Errorf("due %s after the first change, want %s", got, tt.due)
			}
		})
	}
}
