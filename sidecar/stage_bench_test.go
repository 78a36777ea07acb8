package sidecar

import (
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// BenchmarkStageOneFileChange is the agent's disk work for a one-file change
// of a 10,000-file snapshot: stage (link 9,999 files), write one, commit,
// and remove the version before last. Run it on a tmpfs (TMPDIR=/dev/shm)
// to leave the disk out.
func BenchmarkStageOneFileChange(b *testing.B) {
	const n = 10000
	w, err := NewWriter(b.TempDir(), Limits{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	content := map[string][]byte{}
	manifest := func(v int) *Manifest {
		m := &Manifest{SchemaVersion: SchemaVersion, Version: fmt.Sprintf("v%d", v)}
		for i := range n {
			c := fmt.Appendf(nil, "shard %d revision %d", i, 0)
			if i == v%n {
				c = fmt.Appendf(nil, "shard %d revision %d", i, v)
			}
			sum := snapshot.Hash(c)
			content[sum] = c
			m.Files = append(m.Files, snapshot.FileMeta{Path: fmt.Sprintf("applications/shard-%05d.json", i), SHA256: sum, Size: int64(len(c)), Kind: snapshot.KindConfig})
		}
		return m
	}
	get := func(sum string) ([]byte, error) { return content[sum], nil }
	if err := w.Write(manifest(0), get); err != nil {
		b.Fatal(err)
	}
	ms := make([]*Manifest, 0, 64)
	for v := 1; v <= cap(ms); v++ {
		ms = append(ms, manifest(v))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := w.Write(ms[i%len(ms)], get); err != nil {
			b.Fatal(err)
		}
		if i%len(ms) == len(ms)-1 { // start over from a fresh name
			b.StopTimer()
			for v := range ms {
				ms[v].Version = fmt.Sprintf("v%d-%d", v+1, i)
			}
			b.StartTimer()
		}
	}
}
