package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

const version = "v0.1.0-test"

var binaries = []string{"gatehouse", "gatehouse-agent", "gatehouse-proxy"}

// tools is the test tools directory; a tool missing there skips the test,
// or fails it under GATEHOUSE_RELEASE=required (make test).
func tools(t *testing.T) string {
	t.Helper()
	dir, err := testkit.Assets()
	if err == nil {
		for _, tool := range []string{"kubectl", "helm", "cyclonedx-gomod", "kube-apiserver", "etcd"} {
			if _, err = os.Stat(filepath.Join(dir, tool)); err != nil {
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("GATEHOUSE_RELEASE") == "required" {
			t.Fatalf("the release tools are missing (%v): test/tools/install.sh builds them", err)
		}
		t.Skipf("the release tools are missing (%v): test/tools/install.sh builds them; GATEHOUSE_RELEASE=required makes this a failure", err)
	}
	return dir
}

// makeRelease runs make release in the repository with args, returning its
// combined output and error.
func makeRelease(args ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", "../..", "release"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReleaseRefusesBadInput: a version that is not semver with its v, or a
// missing chart, stops make release before it builds anything.
func TestReleaseRefusesBadInput(t *testing.T) {
	tools(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"VERSION=1.2.3"}, `VERSION="1.2.3" is not a release version: give v, then MAJOR.MINOR.PATCH (semver), e.g. make release VERSION=v0.1.0`},
		{[]string{"VERSION=v1.2"}, `VERSION="v1.2" is not a release version`},
		{[]string{"VERSION=v01.2.3"}, `VERSION="v01.2.3" is not a release version`},
		{[]string{"VERSION=v0.1.0", "CHART=testdata/no-chart"}, "testdata/no-chart/Chart.yaml is missing: the release packages the Helm chart"},
	} {
		dist := t.TempDir()
		out, err := makeRelease(append(tt.args, "DIST="+dist)...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("make release %v: %v\n%s\nwant %q", tt.args, err, out, tt.want)
		}
		if entries, _ := os.ReadDir(dist); len(entries) > 0 {
			t.Errorf("make release %v wrote %d files before refusing", tt.args, len(entries))
		}
	}
}

func TestRelease(t *testing.T) {
	dir := tools(t)
	dist := t.TempDir()
	out, err := makeRelease("VERSION="+version, "PLATFORMS=linux/amd64", "CLI_PLATFORMS=", "RELEASE_IMAGES=no", "DIST="+dist)
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Run("SHA256SUMS covers every file and matches it", func(t *testing.T) { checkSums(t, dist) })
	for _, b := range binaries {
		path := filepath.Join(dist, b+"-linux-amd64")
		t.Run(b+" is static and prints its version", func(t *testing.T) { checkBinary(t, path) })
		t.Run(b+"'s SBOM lists the modules it links", func(t *testing.T) { checkSBOM(t, path) })
	}
	t.Run("install.yaml pins every image to the version and passes a server-side dry run", func(t *testing.T) {
		checkInstall(t, dir, filepath.Join(dist, "install.yaml"))
	})
	t.Run("the chart is packaged at the version", func(t *testing.T) {
		checkChart(t, dir, filepath.Join(dist, "gatehouse-"+strings.TrimPrefix(version, "v")+".tgz"))
	})
}

func checkSums(t *testing.T, dist string) {
	raw, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", sc.Text())
		}
		listed[name] = sum
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		files = append(files, e.Name())
		b, err := os.ReadFile(filepath.Join(dist, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if listed[e.Name()] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA256SUMS says %q, the file hashes to %x", e.Name(), listed[e.Name()], sum)
		}
	}
	if len(listed) != len(files) {
		t.Errorf("SHA256SUMS lists %d files, dist holds %d besides it: %q", len(listed), len(files), files)
	}
	// 3 binaries, their SBOMs, install.yaml and the chart.
	if len(files) != 2*len(binaries)+2 {
		t.Errorf("dist holds %q, want the binaries, their SBOMs, install.yaml and the chart", files)
	}
	if path, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(path, "-c", "SHA256SUMS")
		cmd.Dir = dist
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
		}
	}
}

func checkBinary(t *testing.T, path string) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("built for %s, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader: not static")
		}
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("a linux/amd64 binary does not run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	opa := goModVersion(t, "github.com/open-policy-agent/opa")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^version: +` + regexp.QuoteMeta(version) + `$`),
		regexp.MustCompile(`(?m)^commit: +[0-9a-f]{40}(-dirty)?$`),
		regexp.MustCompile(`(?m)^build date: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`),
		regexp.MustCompile(`(?m)^go: +go1\.`),
		regexp.MustCompile(`(?m)^opa: +` + regexp.QuoteMeta(opa) + `$`),
		regexp.MustCompile(`(?m)^snapshot schema: +\d+ \(reads \d+-\d+\)$`),
	} {
		if !want.Match(out) {
			t.Errorf("--version does not match %s:\n%s", want, out)
		}
	}
}

// goModVersion is the version go.mod selects for module.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

// sbom is the part of a CycloneDX BOM the test reads.
type sbom struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component struct {
			Name, Version, Purl string
		} `json:"component"`
	} `json:"metadata"`
	Components []struct {
		Name, Version, Purl string
	} `json:"components"`
}

func checkSBOM(t *testing.T, path string) {
	raw, err := os.ReadFile(path + ".cdx.json")
	if err != nil {
		t.Fatal(err)
	}
	var bom sbom
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatal(err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/gatehouse-dev/gatehouse" || bom.Metadata.Component.Version != version {
		t.Errorf("the SBOM describes %s %s %s, want CycloneDX of github.com/gatehouse-dev/gatehouse %s",
			bom.BOMFormat, bom.Metadata.Component.Name, bom.Metadata.Component.Version, version)
	}
	// The package URL names the binary's platform, not the build host's.
	if !strings.Contains(bom.Metadata.Component.Purl, "goarch=amd64&goos=linux") {
		t.Errorf("the SBOM's package URL %s does not name linux/amd64", bom.Metadata.Component.Purl)
	}
	listed := map[string]string{}
	for _, c := range bom.Components {
		listed[c.Name] = c.Version
	}
	// The modules the binary links, as `go version -m` reads them, each
	// at the version go.mod selects.
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Deps) == 0 {
		t.Fatal("the binary records no modules")
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if v, ok := listed[d.Path]; !ok || v != d.Version {
			t.Errorf("the binary links %s %s; the SBOM lists %q", d.Path, d.Version, v)
		}
		if want := goModVersion(t, d.Path); want != d.Version {
			t.Errorf("the binary links %s %s, go.mod selects %s", d.Path, d.Version, want)
		}
	}
	if listed["std"] != runtime.Version() && listed["std"] != info.GoVersion {
		t.Errorf("the SBOM lists Go's standard library at %q, want %s", listed["std"], info.GoVersion)
	}
	// OPA is in the CLI and the proxy; the agent's point is to leave it out.
	_, opa := listed["github.com/open-policy-agent/opa"]
	if wantOPA := !strings.HasSuffix(filepath.Base(path), "agent-linux-amd64"); opa != wantOPA {
		t.Errorf("the SBOM lists OPA: %v, want %v", opa, wantOPA)
	}
}

var imageLine = regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*"?([^"\s]+)"?\s*$`)

func checkInstall(t *testing.T, dir, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(":latest")) {
		t.Error("install.yaml says :latest")
	}
	var images []string
	for _, m := range imageLine.FindAllSubmatch(raw, -1) {
		images = append(images, string(m[1]))
	}
	slices.Sort(images)
	images = slices.Compact(images)
	var want []string
	for _, b := range binaries {
		want = append(want, "ghcr.io/gatehouse-dev/"+b+":"+version)
	}
	slices.Sort(want)
	if !slices.Equal(images, want) {
		t.Errorf("install.yaml's images are %q, want %q", images, want)
	}
	log.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	if _, err := env.Start(); err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin []byte, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// A dry run creates nothing, so the namespaces the objects go into
	// must exist: Argo CD's, and Gatehouse's as the install's first apply
	// would have made it.
	kubectl([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: gatehouse-system}\n"), "create", "-f", "-")
	kubectl(raw, "apply", "--dry-run=server", "-f", "-")
}

func checkChart(t *testing.T, dir, path string) {
	out, err := exec.Command(filepath.Join(dir, "helm"), "show", "chart", path).CombinedOutput()
	if err != nil {
		t.Fatalf("helm show chart: %v\n%s", err, out)
	}
	for _, want := range []string{"version: " + strings.TrimPrefix(version, "v") + "\n", "appVersion: " + version + "\n"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("Chart.yaml in the package lacks %q:\n%s", want, out)
		}
	}
	// The chart states the Kubernetes it needs; render for the one the
	// tests run (kubectl's version is the API server's).
	raw, err := exec.Command(filepath.Join(dir, "kubectl"), "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	var kube struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(raw, &kube); err != nil || kube.ClientVersion.GitVersion == "" {
		t.Fatalf("kubectl version: %v: %s", err, raw)
	}
	var stderr bytes.Buffer
	helm := exec.Command(filepath.Join(dir, "helm"), "template", "gatehouse", path, "--namespace", "gatehouse-system", "--kube-version", kube.ClientVersion.GitVersion)
	helm.Stderr = &stderr
	rendered, err := helm.Output()
	if err != nil {
		t.Fatalf("helm template of the package: %v\n%s", err, stderr.String())
	}
	if len(imageLine.FindAllSubmatch(rendered, -1)) == 0 {
		t.Fatal("the packaged chart renders no image")
	}
	for _, m := range imageLine.FindAllSubmatch(rendered, -1) {
		if !strings.HasSuffix(string(m[1]), ":"+version) {
			t.Errorf("the packaged chart renders image %s, want every image at %s", m[1], version)
		}
	}
}
