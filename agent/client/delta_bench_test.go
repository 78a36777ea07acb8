package client

import (
	"fmt"
	"testing"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// BenchmarkDeltaManifest is the agent's CPU for reading a one-file delta of a
// 10,000-file snapshot: base manifest from the writer, delta applied, the
// result's version checked and the manifest validated.
func BenchmarkDeltaManifest(b *testing.B) {
	var files []*agentv1.FileMeta
	content := map[string][]byte{}
	for i := range 10000 {
		c := fmt.Sprint(i)
		files = append(files, meta(fmt.Sprintf("applications/shard-%05d.json", i), c))
		content[sha(c)] = []byte(c)
	}
	base := &agentv1.ConfigAvailable{Version: versionOf(b, files), Manifest: &agentv1.Manifest{Files: files}}
	w, err := sidecar.NewWriter(b.TempDir(), sidecar.DefaultLimits(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Wait) // a Commit's clean-up runs on after it returns
	a := &Agent{o: Options{Writer: w, Limits: sidecar.DefaultLimits()}}
	m, _, err := toManifest(base, a.o.Limits)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(m, func(sum string) ([]byte, error) { return content[sum], nil }); err != nil {
		b.Fatal(err)
	}
	next := append([]*agentv1.FileMeta(nil), files...)
	next[42] = meta(next[42].GetPath(), "changed")
	delta := &agentv1.ConfigAvailable{Version: versionOf(b, next), BaseVersion: base.GetVersion(), Changed: []*agentv1.FileMeta{next[42]}}
	for b.Loop() {
		if _, _, err := a.manifestOf(delta); err != nil {
			b.Fatal(err)
		}
	}
}
