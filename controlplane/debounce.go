package controlplane

import "time"

// debounce decides when a run of changes has settled: Quiet after the last
// change, or MaxDelay after the first, whichever comes first. A burst (a
// kubectl apply of many objects, a cache resync) becomes one version, and a
// steady stream of changes still ships every MaxDelay.
type debounce struct {
	quiet, maxDelay time.Duration
	first, last     time.Time
}

// change records a change at now.
func (d *debounce) change(now time.Time) {
	if d.first.IsZero() {
		d.first = now
	}
	d.last = now
}

// due is when the changes recorded so far have settled.
func (d *debounce) due() time.Time {
	quiet, latest := d.last.Add(d.quiet), d.first.Add(d.maxDelay)
	if quiet.Before(latest) {
		return quiet
	}
	return latest
}
