package snapshot

import (
	"math"
	"unsafe"
)

// appShard is one shard's Applications as a Decoder remembers them between
// snapshots: every string of every Application in one byte arena, and where
// each ends in ends, appFields a record. Neither holds a pointer, so what a
// long-running reader keeps for its next decode is not scanned by the Go
// collector at each cycle (a proxy under load runs one every second or so,
// and its requests wait behind the marks: with 10,000 Applications the
// shards as decoded were about 1.3 MB of pointers and 60,000 strings to
// mark, docs/performance.md, issue 27 §2).
type appShard struct {
	arena []byte
	ends  []uint32
}

// appFields is the number of strings in an Application, in the order
// appStrings lists them.
const appFields = 6

// appStrings are the addresses of a's strings, in the order a shard packs them.
func appStrings(a *Application) [appFields]*string {
	return [appFields]*string{&a.Namespace, &a.Name, &a.Project, &a.Destination.Name, &a.Destination.Server, &a.Destination.Namespace}
}

// packApps copies apps into a shard; ok is false when they do not fit
// (more than 4 GiB of strings: never from a verified shard file in
// practice), and then the shard is not remembered.
func packApps(apps []Application) (s appShard, ok bool) {
	n := 0
	for i := range apps {
		for _, f := range appStrings(&apps[i]) {
			n += len(*f)
		}
	}
	if n > math.MaxUint32 {
		return appShard{}, false
	}
	s = appShard{arena: make([]byte, 0, n), ends: make([]uint32, 0, len(apps)*appFields)}
	for i := range apps {
		for _, f := range appStrings(&apps[i]) {
			s.arena = append(s.arena, *f...)
			s.ends = append(s.ends, uint32(len(s.arena)))
		}
	}
	return s, true
}

// appendTo appends the shard's Applications to dst. Their strings point
// into the arena without a copy; the arena is never written once packed,
// and Contents are read-only.
func (s appShard) appendTo(dst []Application) []Application {
	start := uint32(0)
	next := func(i int) string {
		end := s.ends[i]
		off := start
		start = end
		if end == off {
			return ""
		}
		return unsafe.String(&s.arena[off], int(end-off))
	}
	for r := 0; r < len(s.ends); r += appFields {
		var a Application
		for j, f := range appStrings(&a) {
			*f = next(r + j)
		}
		dst = append(dst, a)
	}
	return dst
}
