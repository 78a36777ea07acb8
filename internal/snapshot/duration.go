package snapshot

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as Go's duration text ("30s"), which is
// what Argo CD's extension config uses and what a person reading the
// snapshot expects.
type Duration time.Duration

// MarshalJSON writes the canonical text, so equal durations encode equally.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads Go's duration text; negative durations are refused.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"30s\": %w", err)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration parses Go's duration text and refuses negative values.
func ParseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: use a number with a unit, such as \"30s\" or \"2m\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(v), nil
}

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
