package image_test

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

var binaries = []string{"gatehouse", "gatehouse-agent", "gatehouse-proxy"}

// stage is one FROM of the Dockerfile and its instructions.
type stage struct {
	from, name   string
	instructions []string
}

func dockerfile(t *testing.T) map[string]stage {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages := map[string]stage{}
	var cur *stage
	var line string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		line += l
		fields := strings.Fields(line)
		line = ""
		if strings.EqualFold(fields[0], "FROM") {
			args := slices.DeleteFunc(fields[1:], func(s string) bool { return strings.HasPrefix(s, "--") })
			s := stage{from: args[0]}
			if len(args) == 3 && strings.EqualFold(args[1], "AS") {
				s.name = args[2]
			}
			stages[s.name] = s
			c := stages[s.name]
			cur = &c
			continue
		}
		if cur != nil {
			cur.instructions = append(cur.instructions, strings.Join(fields, " "))
			stages[cur.name] = *cur
		}
	}
	return stages
}

// TestDockerfile: one target per binary, each distroless static nonroot,
// running as the user the manifests run as, the binary as entrypoint and
// nothing else; the binaries come from `make build`, the Makefile's, for
// exactly these three.
func TestDockerfile(t *testing.T) {
	stages := dockerfile(t)
	build, ok := stages["build"]
	if !ok || !slices.ContainsFunc(build.instructions, func(i string) bool {
		return strings.HasPrefix(i, "RUN ") && strings.Contains(i, "make build BINDIR=/out")
	}) {
		t.Errorf("the build stage does not run make build BINDIR=/out: %q", build.instructions)
	}
	for _, b := range binaries {
		s, ok := stages[b]
		if !ok {
			t.Errorf("no target %s", b)
			continue
		}
		if !regexp.MustCompile(`^gcr\.io/distroless/static-debian\d+:nonroot$`).MatchString(s.from) {
			t.Errorf("target %s is FROM %s, want distroless static nonroot", b, s.from)
		}
		want := []string{
			"COPY --from=build /out/" + b + " /usr/local/bin/" + b,
			"USER 65532:65532",
			`ENTRYPOINT ["/usr/local/bin/` + b + `"]`,
		}
		if !slices.Equal(s.instructions, want) {
			t.Errorf("target %s: %q, want %q", b, s.instructions, want)
		}
		if _, err := os.Stat(filepath.Join("../../cmd", b)); err != nil {
			t.Errorf("target %s: no cmd/%s", b, b)
		}
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BINARIES\s*=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), binaries) {
		t.Errorf("the Makefile builds %q, want %q", m, binaries)
	}
	if !regexp.MustCompile(`(?m)^GOBUILD\s*=\s*CGO_ENABLED=0 \$\(GO\) build -trimpath `).Match(makefile) {
		t.Error("the Makefile's GOBUILD is not a static (CGO_ENABLED=0), -trimpath build")
	}
}

// TestManifestsRunTheImages: every container of the shipped Deployments
// runs one of the three images, with its binary's flags, as the image's
// user.
func TestManifestsRunTheImages(t *testing.T) {
	for _, file := range []string{"deployment.yaml", "proxy-deployment.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../manifests/base", file))
		if err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(raw, &d); err != nil {
			t.Fatal(err)
		}
		spec := d.Spec.Template.Spec
		if spec.SecurityContext == nil || spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser != 65532 {
			t.Errorf("%s: runs as %v, want 65532, the images' user", file, spec.SecurityContext)
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			image, _, _ := strings.Cut(c.Image, ":")
			if !slices.Contains(binaries, strings.TrimPrefix(image, "ghcr.io/gatehouse-dev/")) || !strings.HasPrefix(image, "ghcr.io/gatehouse-dev/") {
				t.Errorf("%s: container %s runs %s, not one of the images", file, c.Name, c.Image)
			}
		}
	}
}

// TestBinaries checks binaries built as the Dockerfile builds them (make
// image sets GATEHOUSE_IMAGE_BINARIES when it cannot build the images):
// static, with no dynamic loader or library the distroless image lacks,
// reproducible paths, the version stamped in, and each one starts.
func TestBinaries(t *testing.T) {
	dir := os.Getenv("GATEHOUSE_IMAGE_BINARIES")
	if dir == "" {
		t.Skip("GATEHOUSE_IMAGE_BINARIES is not set: make image sets it to binaries built as the Dockerfile builds them")
	}
	version := os.Getenv("GATEHOUSE_IMAGE_VERSION")
	for _, b := range binaries {
		t.Run(b, func(t *testing.T) {
			path := filepath.Join(dir, b)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the binary names a dynamic loader; distroless static has none")
				}
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("the binary needs shared libraries %q", libs)
			}
			info, err := buildinfo.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
				t.Errorf("built with CGO_ENABLED=%q, -trimpath=%q", settings["CGO_ENABLED"], settings["-trimpath"])
			}
			// -trimpath keeps -ldflags out of the build information; the
			// binary says the stamped version itself.
			if out, err := exec.Command(path, "--version").CombinedOutput(); err != nil {
				t.Errorf("%s --version: %v\n%s", b, err, out)
			} else if version != "" && !bytes.Contains(out, []byte("version:         "+version+"\n")) {
				t.Errorf("version %s is not stamped into the binary; --version says:\n%s", version, out)
			}
			if out, err := exec.Command(path, "--help").CombinedOutput(); err != nil {
				t.Errorf("%s --help: %v\n%s", b, err, out)
			}
		})
	}
}
