package client

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// BenchmarkFullAnnouncement is the agent's CPU for reading the full
// announcement of a 10,000-file snapshot (what every agent reads on a cold
// start), with the per-file manifest (about 1 MB) and with its columns: the
// Command decoded from the wire, then converted and validated into the
// volume's manifest.
func BenchmarkFullAnnouncement(b *testing.B) {
	var files []*agentv1.FileMeta
	for i := range 10000 {
		files = append(files, meta(fmt.Sprintf("applications/shard-%05d.json", i), fmt.Sprint(i)))
	}
	version := versionOf(b, files)
	var model []snapshot.FileMeta
	for _, f := range files {
		m, err := f.SnapshotFileMeta()
		if err != nil {
			b.Fatal(err)
		}
		model = append(model, m)
	}
	cols, err := agentv1.NewManifestColumns(model)
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name string
		ca   *agentv1.ConfigAvailable
	}{
		{"manifest", &agentv1.ConfigAvailable{Version: version, Manifest: &agentv1.Manifest{Files: files}}},
		{"columns", &agentv1.ConfigAvailable{Version: version, ManifestColumns: cols}},
	} {
		wire, err := proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: form.ca}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(form.name, func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				var cmd agentv1.Command
				if err := proto.Unmarshal(wire, &cmd); err != nil {
					b.Fatal(err)
				}
				if _, _, err := toManifest(cmd.GetConfigAvailable(), sidecar.DefaultLimits()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
