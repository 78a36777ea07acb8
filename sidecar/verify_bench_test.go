package sidecar

import (
	"fmt"
	"testing"
)

// BenchmarkVerifyCurrent is the agent's check of the version it serves: a
// 10,000-file snapshot (about 1 KiB each), read and hashed with Load's
// code. Run it on a tmpfs (TMPDIR=/dev/shm) to leave the disk out.
func BenchmarkVerifyCurrent(b *testing.B) {
	const n = 10000
	w, err := NewWriter(b.TempDir(), Limits{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	content := map[string][]byte{}
	m := &Manifest{SchemaVersion: SchemaVersion, Version: "v1"}
	for i := range n {
		c := fmt.Appendf(nil, "%01000d", i)
		sum := HashBytes(c)
		content[sum] = c
		m.Files = append(m.Files, FileMeta{Path: fmt.Sprintf("applications/shard-%05d.json", i), SHA256: sum, Size: int64(len(c)), Kind: KindConfig})
	}
	if err := w.Write(m, func(sum string) ([]byte, error) { return content[sum], nil }); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.VerifyCurrent(); err != nil {
			b.Fatal(err)
		}
	}
}
