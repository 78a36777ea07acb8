package testkit

import "testing"

// TestLogBufferTail: Tail is the last lines written, however the writes
// split them.
func TestLogBufferTail(t *testing.T) {
	for _, tt := range []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		{"nothing written", nil, 3, ""},
		{"fewer lines than asked", []string{"a\n", "b\n"}, 3, "a\nb"},
		{"the last lines", []string{"a\nb\n", "c\nd"}, 2, "c\nd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l LogBuffer
			for _, w := range tt.writes {
				_, _ = l.Write([]byte(w))
			}
			if got := l.Tail(tt.n); got != tt.want {
				t.Fatalf("Tail(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}
