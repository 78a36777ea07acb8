package buildinfo

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestStampedValuesWin(t *testing.T) {
	bi := &debug.BuildInfo{
		Main:     debug.Module{Version: "v9.9.9"},
		Deps:     []*debug.Module{{Path: opaModule, Version: "v0.0.1"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.time", Value: "2020-01-01T00:00:00Z"}},
	}
	i := get("v0.1.0", "0123456789abcdef", "2026-11-27T22:00:00Z", "v1.22.2", bi)
	want := Info{Version: "v0.1.0", Commit: "0123456789abcdef", BuildDate: "2026-11-27T22:00:00Z", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, OPAVersion: "v1.22.2", SnapshotSchema: snapshot.SchemaVersion, SnapshotSchemaReads: "3-4"}
	if i != want {
		t.Fatalf("got %+v\nwant %+v", i, want)
	}
}

// A binary built without the Makefile (go build, go install) still says
// what the Go toolchain recorded.
func TestUnstampedFallsBackToTheToolchain(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want Info
	}{
		{"go build in a dirty checkout", &debug.BuildInfo{
			Main: debug.Module{Version: "(devel)"},
			Deps: []*debug.Module{{Path: "github.com/prometheus/client_golang", Version: "v1.0.0"}, {Path: opaModule, Version: "v1.22.2"}},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-27T21:00:00Z"},
				{Key: "vcs.modified", Value: "true"}},
		}, Info{Version: "dev", Commit: "abc123-dirty", BuildDate: "2026-11-27T21:00:00Z", OPAVersion: "v1.22.2"}},
		{"go install of a tagged module (the agent: no OPA linked)", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
			Info{Version: "v0.1.0", Commit: "unknown", BuildDate: "unknown", OPAVersion: "unknown"}},
		{"no build information", nil, Info{Version: "dev", Commit: "unknown", BuildDate: "unknown", OPAVersion: "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := get("", "", "", "", tt.bi)
			got := Info{Version: i.Version, Commit: i.Commit, BuildDate: i.BuildDate, OPAVersion: i.OPAVersion}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTextAndJSON(t *testing.T) {
	i := get("v0.1.0", "abc", "2026-11-27T22:00:00Z", "v1.22.2", nil)
	text := i.String()
	for _, line := range []string{"version:         v0.1.0\n", "commit:          abc\n", "build date:      2026-11-27T22:00:00Z\n",
		"go:              " + runtime.Version() + "\n", "opa:             v1.22.2\n", "snapshot schema: 3 (reads 3-4)\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
	var back Info
	if err := json.Unmarshal([]byte(i.JSON()), &back); err != nil || back != i {
		t.Fatalf("JSON does not read back: %v, %+v", err, back)
	}
}

func TestVersionCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
		err  string
	}{
		{args: nil, want: "snapshot schema: "},
		{args: []string{"-o", "json"}, want: `"snapshotSchema": 3`},
		{args: []string{"-o", "yaml"}, err: `--output "yaml": want text or json`},
		{args: []string{"extra"}, err: `unexpected argument "extra": version takes no arguments`},
	} {
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tt.args)
		err := cmd.Execute()
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.err)
		case tt.err == "" && (err != nil || !strings.Contains(out.String(), tt.want)):
			t.Errorf("%v: %v, output %q, want %q in it", tt.args, err, out.String(), tt.want)
		}
	}
}

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, "agent"); err != nil {
		t.Fatal(err)
	}
	// A second registration (gatehouse dev, tests running a role twice)
	// is the same series, not an error.
	if err := Register(reg, "agent"); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	i := Get()
	want := `# HELP gatehouse_build_info The build of this Gatehouse component: always 1, its identity in the labels.
# TYPE gatehouse_build_info gauge
gatehouse_build_info{build_date="` + i.BuildDate + `",commit="` + i.Commit + `",component="agent",go_version="` + i.GoVersion +
		`",opa_version="` + i.OPAVersion + `",snapshot_schema="3",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricName); err != nil {
		t.Fatal(err)
	}
}
