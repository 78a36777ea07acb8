package buildinfo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Stamped by the Makefile's GOBUILD:
//
//	-X github.com/gatehouse-dev/gatehouse/internal/buildinfo.version=v0.1.0
//
// and likewise commit, date (the commit's time, RFC 3339 UTC, so a build
// is reproducible) and opaVersion (go.mod's github.com/open-policy-agent/opa,
// stamped because the agent binary does not link OPA, yet it reads
// policies the controller compiled with it).
var (
	version    string
	commit     string
	date       string
	opaVersion string
)

const opaModule = "github.com/open-policy-agent/opa"

// Info is what a binary says about its build.
type Info struct {
	// Version is the release (v0.1.0), or what `git describe` said of a
	// development build; "dev" when nothing says.
	Version string `json:"version"`
	// Commit is the source's git commit ("unknown" when not known); a
	// "-dirty" suffix marks uncommitted changes.
	Commit string `json:"commit"`
	// BuildDate is the commit's time, RFC 3339 ("unknown" when not known).
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// OPAVersion is the Open Policy Agent module the policies are built
	// and evaluated with ("unknown" when not known).
	OPAVersion string `json:"opaVersion"`
	// SnapshotSchema is the snapshot schema the controller writes;
	// SnapshotSchemaReads the range agents and proxies load.
	SnapshotSchema      int    `json:"snapshotSchema"`
	SnapshotSchemaReads string `json:"snapshotSchemaReads"`
}

// Get is this binary's Info: the stamped values, else what the Go
// toolchain recorded in the binary (a module version when installed with
// go install, the VCS revision and time when built in a git checkout).
func Get() Info { return get(version, commit, date, opaVersion, readBuildInfo()) }

// readBuildInfo is debug.ReadBuildInfo, nil when the binary has none.
func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

func get(version, commit, date, opa string, bi *debug.BuildInfo) Info {
	var vcsRev, vcsTime, modVersion, depOPA string
	var dirty bool
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if v := bi.Main.Version; v != "(devel)" {
			modVersion = v
		}
		for _, d := range bi.Deps {
			if d.Path == opaModule {
				depOPA = d.Version
			}
		}
	}
	if commit == "" && vcsRev != "" && dirty {
		vcsRev += "-dirty"
	}
	lo, hi := snapshot.ReadableSchemas()
	return Info{
		Version:             cmp.Or(version, modVersion, "dev"),
		Commit:              cmp.Or(commit, vcsRev, "unknown"),
		BuildDate:           cmp.Or(date, vcsTime, "unknown"),
		GoVersion:           runtime.Version(),
		Platform:            runtime.GOOS + "/" + runtime.GOARCH,
		OPAVersion:          cmp.Or(opa, depOPA, "unknown"),
		SnapshotSchema:      snapshot.SchemaVersion,
		SnapshotSchemaReads: fmt.Sprintf("%d-%d", lo, hi),
	}
}

// String is the text --version and `gatehouse version` print: one
// "name: value" line each, the binary's name first.
func (i Info) String() string {
	var b strings.Builder
	for _, l := range [][2]string{
		{"version", i.Version},
		{"commit", i.Commit},
		{"build date", i.BuildDate},
		{"go", i.GoVersion},
		{"platform", i.Platform},
		{"opa", i.OPAVersion},
		{"snapshot schema", fmt.Sprintf("%d (reads %s)", i.SnapshotSchema, i.SnapshotSchemaReads)},
	} {
		fmt.Fprintf(&b, "%-16s %s\n", l[0]+":", l[1])
	}
	return b.String()
}

// JSON is i as one JSON object and a newline.
func (i Info) JSON() string {
	b, _ := json.MarshalIndent(i, "", "  ") // a struct of strings and ints: cannot fail
	return string(b) + "\n"
}
