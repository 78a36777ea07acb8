package sidecar

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// BenchmarkVerifyCurrent is the agent's check of the version it serves, with
// Load's code: a 10,000-file snapshot (1,000 bytes each) read and hashed,
// through directory handles (fast=true, where the platform has them) and
// through os.Root. It reports the process's CPU per check, which a busy
// machine disturbs less than the wall clock. Run it on a tmpfs
// (TMPDIR=/dev/shm) to leave the disk out.
func BenchmarkVerifyCurrent(b *testing.B) {
	w, _ := tenThousandFiles(b)
	benchBothOpeners(b, func() error { _, err := w.VerifyCurrent(); return err })
}

// BenchmarkLoad is the proxy's load of the same snapshot: every file read,
// hashed and kept.
func BenchmarkLoad(b *testing.B) {
	_, root := tenThousandFiles(b)
	benchBothOpeners(b, func() error { _, err := Load(root, Limits{}); return err })
}

// benchBothOpeners runs op with each file opener, reporting CPU per op.
func benchBothOpeners(b *testing.B, op func() error) {
	for _, fast := range []bool{true, false} {
		if fast && !fastFiles {
			continue
		}
		b.Run(fmt.Sprintf("fast=%v", fast), func(b *testing.B) {
			defer func(old bool) { fastFiles = old }(fastFiles)
			fastFiles = fast
			start := cpuTime()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// tenThousandFiles writes a version of 10,000 files of 1,000 bytes.
func tenThousandFiles(b *testing.B) (*Writer, string) {
	root := b.TempDir()
	w, err := NewWriter(root, Limits{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	content := map[string][]byte{}
	m := &Manifest{SchemaVersion: SchemaVersion, Version: "v1"}
	for i := range 10000 {
		c := fmt.Appendf(nil, "%01000d", i)
		sum := snapshot.Hash(c)
		content[sum] = c
		m.Files = append(m.Files, snapshot.FileMeta{Path: fmt.Sprintf("applications/shard-%05d.json", i), SHA256: sum, Size: int64(len(c)), Kind: snapshot.KindConfig})
	}
	if err := w.Write(m, func(sum string) ([]byte, error) { return content[sum], nil }); err != nil {
		b.Fatal(err)
	}
	return w, root
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
