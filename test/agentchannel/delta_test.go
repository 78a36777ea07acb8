package agentchannel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// A one-file change of a many-file snapshot travels as a delta
// announcement and a one-file download, and the agent links every
// unchanged file from the version it serves instead of writing it again.
func TestOneFileChangeIsADeltaAndALink(t *testing.T) {
	reg := prometheus.NewRegistry()
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.Registerer = reg })
	v1files := files(200, "app")
	v1files["secrets/token"] = "s3cret"
	v1 := cp.publish(t, v1files)
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	cold := sa.downloadedBytes()

	v2files := files(200, "app")
	v2files["secrets/token"] = "s3cret"
	v2files["config/app-07.json"] = `{"n": 7, "p": "changed"}`
	v2 := cp.publish(t, v2files)
	eventually(t, wait, "v2 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v2.Version() })

	if got := counterValue(reg, "gatehouse_agentserver_delta_announcements_total"); got != 1 {
		t.Errorf("%v delta announcements, want 1 (v2 as a delta from v1)", got)
	}
	if got, want := sa.downloadedBytes()-cold, float64(len(v2files["config/app-07.json"])); got != want {
		t.Errorf("downloaded %v bytes for the change, want %v (the changed file only)", got, want)
	}
	s := sa.volume(t)
	if got, _ := s.File("config/app-07.json"); !strings.Contains(string(got), "changed") {
		t.Fatalf("changed file on the volume: %q", got)
	}
	for _, p := range []string{"config/app-08.json", "secrets/token"} {
		a, err := os.Lstat(filepath.Join(sa.root, sidecar.DirVersions, v1.Version(), p))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Lstat(filepath.Join(sa.root, sidecar.DirVersions, v2.Version(), p))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(a, b) {
			t.Errorf("%s was written again instead of linked from v1", p)
		}
	}
}
