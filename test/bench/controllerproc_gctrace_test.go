package bench

import (
	"testing"
	"time"
)

func TestParseGCTrace(t *testing.T) {
	log := "W1128 a controller warning\n" +
		"gc 47 @0.327s 5%: 1.3+0.48+0.002 ms clock, 2.7+0/0.11/0+0.005 ms cpu, 3->6->3 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"gc 48 @12.330s 15%: 0.15+0.16+0.002 ms clock, 0.31+1.5/0.10/2+0.004 ms cpu, 400->404->201 MB, 402 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n" +
		"gc 49 @x garbage\n"
	got := parseGCTrace(log)
	want := []gcCycle{
		{cpu: time.Duration((2.7 + 0 + 0.11 + 0 + 0.005) * float64(time.Millisecond)), goalMB: 4},
		{cpu: time.Duration((0.31 + 1.5 + 0.10 + 2 + 0.004) * float64(time.Millisecond)), goalMB: 402},
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d cycles, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if d := got[i].cpu - want[i].cpu; d < -time.Microsecond || d > time.Microsecond || got[i].goalMB != want[i].goalMB {
			t.Errorf("cycle %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
