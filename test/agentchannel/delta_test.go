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
// announcement carrying the changed file's content (no Download at all),
// and the agent links every unchanged file from the version it serves
// instead of writing it again.
func TestOneFileChangeIsADeltaAndALink(t *testing.T) {
	reg := prometheus.NewRegistry()
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.Registerer = reg })
	v1files := files(200, "app")
	v1files["secrets/token"] = "s3cret"
	v1 := cp.publish(t, v1files)
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	cold := sa.downloadedBytes()
	coldDownloads := counterValue(reg, "gatehouse_agentserver_downloads_total")

	v2files := files(200, "app")
	v2files["secrets/token"] = "s3cret"
	v2files["config/app-07.json"] = `{"n": 7, "p": "changed"}`
	v2 := cp.publish(t, v2files)
	eventually(t, wait, "v2 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v2.Version() })

	if got := counterValue(reg, "gatehouse_agentserver_delta_announcements_total"); got != 1 {
		t.Errorf("%v delta announcements, want 1 (v2 as a delta from v1)", got)
	}
	if got, want := sa.downloadedBytes()-cold, float64(len(v2files["config/app-07.json"])); got != want {
		t.Errorf("received %v bytes for the change, want %v (the changed file only)", got, want)
	}
	if got := counterValue(reg, "gatehouse_agentserver_downloads_total") - coldDownloads; got != 0 {
		t.Errorf("%v downloads for a one-file change, want none (its content comes with the announcement)", got)
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

// A change whose content is too large to ride in the announcement is still
// announced as a delta, and its content downloaded.
func TestLargeChangeIsDownloaded(t *testing.T) {
	reg := prometheus.NewRegistry()
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.Registerer = reg })
	v1files := files(200, "app")
	v1 := cp.publish(t, v1files)
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	coldDownloads := counterValue(reg, "gatehouse_agentserver_downloads_total")

	big := `{"p": "` + strings.Repeat("x", 70<<10) + `"}`
	v2files := files(200, "app")
	v2files["config/app-07.json"] = big
	v2 := cp.publish(t, v2files)
	eventually(t, wait, "v2 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v2.Version() })
	if got := counterValue(reg, "gatehouse_agentserver_delta_announcements_total"); got != 1 {
		t.Errorf("%v delta announcements, want 1", got)
	}
	if got := counterValue(reg, "gatehouse_agentserver_downloads_total") - coldDownloads; got != 1 {
		t.Errorf("%v downloads for a 70 KiB change, want 1", got)
	}
	if got, _ := sa.volume(t).File("config/app-07.json"); string(got) != big {
		t.Fatalf("changed file on the volume: %d bytes, want %d", len(got), len(big))
	}
}
