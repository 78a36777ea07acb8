package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The operators docs/install.md installs Gatehouse beside, whose CRDs the
// page's commands need: their own CRD files, from their Go modules (the
// Go module proxy, as the other test tooling).
const (
	certManagerModule        = "github.com/cert-manager/cert-manager@v1.21.2"
	prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
)

// guidePlaceholders are the values the test gives the <placeholders> of
// docs/install.md; a placeholder missing here fails the test. The guide's
// cluster has each of these namespaces.
var guidePlaceholders = map[string]string{
	"<gateway-namespace>":    "gateway-system",
	"<prometheus-namespace>": "monitoring",
}

// The namespaces of what the page assumes runs already: Argo CD (and an
// Argo CD elsewhere, for "Argo CD in another namespace"), a Gateway, an
// ingress controller, Prometheus and Grafana.
var guideNamespaces = []string{"argocd", "gitops", "gateway-system", "ingress-nginx", "monitoring"}

// guideBlock is one shell block of the install guide and what its marker
// (an HTML comment on the line before the fence) says about it.
type guideBlock struct {
	line       int
	script     string
	only       string // "helm" or "kustomize": run only on that way of installing
	needsNodes bool   // needs running Pods: checked, not run
}

var (
	guideMarker      = regexp.MustCompile(`^<!--\s*test:\s*(.*?)\s*-->$`)
	guidePlaceholder = regexp.MustCompile(`<[a-z][a-z0-9-]*>`)
)

// guideBlocks reads the sh blocks of a Markdown page, those inside list
// items too, with their markers.
func guideBlocks(t *testing.T, path string) []guideBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out []guideBlock
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := lines[i][:len(lines[i])-len(trimmed)]
		lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
		start := i
		var body strings.Builder
		for i++; i < len(lines) && strings.TrimLeft(lines[i], " ") != "```"; i++ {
			body.WriteString(strings.TrimPrefix(lines[i], indent))
			body.WriteByte('\n')
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: the code block is not closed", path, start+1)
		}
		if lang != "sh" && lang != "bash" && lang != "shell" {
			continue
		}
		b := guideBlock{line: start + 1, script: body.String()}
		if start > 0 {
			if m := guideMarker.FindStringSubmatch(strings.TrimSpace(lines[start-1])); m != nil {
				for _, word := range strings.Fields(m[1]) {
					switch word {
					case "helm", "kustomize":
						b.only = word
					case "needs-nodes":
						b.needsNodes = true
					default:
						t.Fatalf("%s:%d: marker %q: unknown word %q (helm, kustomize, needs-nodes)", path, start, m[0], word)
					}
				}
			}
		}
		out = append(out, b)
	}
	return out
}

// TestInstallGuide runs every command of docs/install.md as written, in the
// page's order, on a fresh kube-apiserver and etcd with the namespace
// controller of kube-controller-manager (so that deleting a namespace
// finishes) and no nodes: once installing with Helm, once with kustomize,
// each way skipping the blocks marked for the other. The cluster has what
// the page assumes: Argo CD (its CRDs, namespace and server certificate),
// the CRDs of the Gateway API, cert-manager and the Prometheus operator, and
// the namespaces the commands name. A block fails on the first command that
// fails (bash -e -o pipefail). Before the kustomize way's first block, the
// server-side dry run the page warns about fails as the page shows.
//
// A block marked needs-nodes (Pods must run: rollout status, port-forward,
// curl to the proxy) is checked instead: bash runs it with kubectl, helm,
// curl and bin/gatehouse recorded rather than run, and each recorded
// command must be one its program knows with flags it knows (its --help
// succeeds and is not a command group's; curl's options are in
// `curl --help all`), and every TYPE/NAME kubectl names must exist.
func TestInstallGuide(t *testing.T) {
	blocks := guideBlocks(t, "../../docs/install.md")
	counts := map[string]int{}
	for _, b := range blocks {
		counts[b.only]++
		if b.needsNodes {
			counts["needs-nodes"]++
		}
	}
	if counts["helm"] < 5 || counts["kustomize"] < 5 || counts[""] < 5 || counts["needs-nodes"] < 3 {
		t.Fatalf("docs/install.md has %v shell blocks by marker; the markers moved?", counts)
	}
	for k, v := range guidePlaceholders {
		if !slices.Contains(guideNamespaces, v) {
			t.Fatalf("guidePlaceholders: %s stands for namespace %s, which the guide's cluster does not have", k, v)
		}
	}
	for _, way := range []string{"helm", "kustomize"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel() // each on an API server of its own
			g := newGuideCluster(t)
			if way == "kustomize" {
				g.freshDryRunFails(t)
			}
			for _, b := range blocks {
				if b.only != "" && b.only != way {
					continue
				}
				script := b.script
				for k, v := range guidePlaceholders {
					script = strings.ReplaceAll(script, k, v)
				}
				if p := guidePlaceholder.FindString(script); p != "" {
					t.Fatalf("docs/install.md:%d: placeholder %s has no value in guidePlaceholders", b.line, p)
				}
				if b.needsNodes {
					g.check(t, b.line, script)
				} else {
					g.run(t, b.line, script)
				}
			}
		})
	}
}

// guideCluster is an API server of the guide's own, and the directory its
// commands run in: a copy of manifests/ and charts/, as in a checkout.
type guideCluster struct {
	env        *envtest.Environment
	client     client.Client
	kubeconfig string
	work, home string
	tools      string
}

func newGuideCluster(t *testing.T) *guideCluster {
	t.Helper()
	tools, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	gatewayAPI := moduleDir(t, "sigs.k8s.io/gateway-api@"+gatewayAPIVersion)
	certManager := moduleDir(t, certManagerModule)
	promOperator := moduleDir(t, prometheusOperatorModule)
	g := &guideCluster{tools: tools, work: t.TempDir(), home: t.TempDir()}
	g.env = &envtest.Environment{
		BinaryAssetsDirectory: tools,
		CRDDirectoryPaths: []string{
			"testdata/crds",
			filepath.Join(gatewayAPI, "config", "crd", "standard"),
			filepath.Join(certManager, "deploy", "crds"),
			filepath.Join(promOperator, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml"),
			filepath.Join(promOperator, "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml"),
		},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := g.env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = g.env.Stop() })
	if g.client, err = client.New(cfg, client.Options{}); err != nil {
		t.Fatal(err)
	}
	u, err := g.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	g.kubeconfig = filepath.Join(g.home, "kubeconfig")
	if err := os.WriteFile(g.kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	g.startNamespaceController(t)
	g.seed(t)
	for _, dir := range []string{"manifests", "charts"} {
		if out, err := exec.Command("cp", "-R", filepath.Join("../..", dir), filepath.Join(g.work, dir)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", dir, err, out)
		}
	}
	return g
}

// moduleDir downloads a Go module (path@version) and returns its directory.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err == nil && mod.Error != "" {
		err = errors.New(mod.Error)
	}
	if err != nil {
		t.Fatalf("go mod download %s (needs the Go module proxy): %v", module, err)
	}
	return mod.Dir
}

// startNamespaceController runs kube-controller-manager's namespace
// controller against the guide's API server: without it a deleted
// namespace stays Terminating, and `kubectl delete` waits for it forever.
func (g *guideCluster) startNamespaceController(t *testing.T) {
	t.Helper()
	bin := filepath.Join(g.tools, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: test/tools/install.sh builds it (KUBEBUILDER_ASSETS=%s is older than that)", err, g.tools)
	}
	logs := &testkit.LogBuffer{}
	cmd := exec.Command(bin, "--kubeconfig", g.kubeconfig, "--controllers", "namespace-controller",
		"--leader-elect=false", "--secure-port=0", "--concurrent-namespace-syncs=2")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-controller-manager: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			t.Logf("kube-controller-manager (the last lines of its log):\n%s", strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	})
}

// seed creates what the page assumes runs already: the namespaces, and
// Argo CD's server certificate where Argo CD keeps it (its self-signed one
// in argocd-secret; one of your own, with its CA, in argocd-server-tls).
func (g *guideCluster) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range guideNamespaces {
		if err := g.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	cert, key := selfSigned(t, "argocd-server")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: "argocd"}, Data: map[string][]byte{"tls.crt": cert, "tls.key": key}},
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-server-tls", Namespace: "argocd"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": cert}},
	} {
		if err := g.client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// selfSigned is a self-signed certificate and its key, in PEM.
func selfSigned(t *testing.T, name string) (cert, key []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// shell runs a script with bash in the guide's directory, as an operator's
// shell would with the cluster's kubeconfig and the test tools on PATH.
func (g *guideCluster) shell(t *testing.T, script string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = g.work
	cmd.Env = append([]string{
		"PATH=" + g.tools + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + g.home,
		"KUBECONFIG=" + g.kubeconfig,
		"HELM_CACHE_HOME=" + filepath.Join(g.home, "helm-cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(g.home, "helm-config"),
		"HELM_DATA_HOME=" + filepath.Join(g.home, "helm-data"),
		"PS4=+ ",
	}, env...)
	// kubectl and helm run as the script's children: end them with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after 5 minutes: %w", err)
	}
	return out.String(), errb.String(), err
}

// run runs a block for real: every command must succeed.
func (g *guideCluster) run(t *testing.T, line int, script string) {
	t.Helper()
	stdout, stderr, err := g.shell(t, "set -e -o pipefail -x\n"+script)
	if err != nil {
		t.Fatalf("docs/install.md:%d: %v\n--- block ---\n%s--- stdout ---\n%s--- stderr (each command after +) ---\n%s",
			line, err, script, stdout, stderr)
	}
}

// freshDryRunFails: on a cluster without gatehouse-system, the server-side
// dry run of manifests/ fails as the page says it does (which is why the
// page creates the namespace first).
func (g *guideCluster) freshDryRunFails(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	const shown = "```text\nError from server (NotFound): error when creating \"manifests/\": namespaces \"gatehouse-system\" not found\n```"
	if !strings.Contains(string(raw), shown) {
		t.Fatalf("docs/install.md no longer shows what a server-side dry run prints on a fresh cluster:\n%s", shown)
	}
	want := strings.Split(shown, "\n")[1]
	stdout, stderr, err := g.shell(t, "kubectl apply -k manifests/ --dry-run=server")
	if err == nil || !strings.Contains(stderr, want+"\n") {
		t.Fatalf("kubectl apply -k manifests/ --dry-run=server on a fresh cluster: %v; the page says it fails with\n%s\n--- stdout ---\n%s--- stderr ---\n%s",
			err, want, stdout, stderr)
	}
}

// guideShims record the commands a needs-nodes block runs instead of
// running them: one record per call, arguments separated by \x1f.
const guideShims = `guide_record() { local a; for a in "$@"; do printf '%s\037' "$a"; done; printf '\036'; } 
kubectl() { guide_record kubectl "$@" >> "$GUIDE_CALLS"; }
helm() { guide_record helm "$@" >> "$GUIDE_CALLS"; }
curl() { guide_record curl "$@" >> "$GUIDE_CALLS"; }
bin/gatehouse() { guide_record bin/gatehouse "$@" >> "$GUIDE_CALLS"; }
set -e -o pipefail
`

// check checks a block that needs running Pods without running it.
func (g *guideCluster) check(t *testing.T, line int, script string) {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "calls")
	if _, stderr, err := g.shell(t, guideShims+script+"\nwait\n", "GUIDE_CALLS="+calls); err != nil {
		t.Fatalf("docs/install.md:%d: %v\n--- block ---\n%s--- stderr ---\n%s", line, err, script, stderr)
	}
	raw, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("docs/install.md:%d: the block runs none of kubectl, helm, curl, bin/gatehouse: %v", line, err)
	}
	for _, record := range strings.Split(strings.TrimSuffix(string(raw), "\x1e"), "\x1e") {
		argv := strings.Split(strings.TrimSuffix(record, "\x1f"), "\x1f")
		if err := g.checkCommand(t, argv); err != nil {
			t.Errorf("docs/install.md:%d: %q: %v", line, strings.Join(argv, " "), err)
		}
	}
}

// checkCommand checks one command of a needs-nodes block.
func (g *guideCluster) checkCommand(t *testing.T, argv []string) error {
	t.Helper()
	var bin string
	switch argv[0] {
	case "curl":
		return checkCurlOptions(argv[1:])
	case "bin/gatehouse":
		bin = binaries.gatehouse
	default:
		bin = filepath.Join(g.tools, argv[0])
	}
	// --help parses the command line as the command would, then prints the
	// help of the command it resolved to.
	help, err := exec.Command(bin, append(argv[1:], "--help")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --help: %w\n%s", argv[0], err, help)
	}
	if !runnable(string(help)) {
		return fmt.Errorf("names a command group, not a command:\n%s", help)
	}
	if argv[0] != "kubectl" {
		return nil
	}
	// The objects it names exist once the page's install ran.
	namespace := "default"
	for i, a := range argv {
		if (a == "-n" || a == "--namespace") && i+1 < len(argv) {
			namespace = argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--namespace="); ok {
			namespace = v
		}
	}
	for _, a := range argv[1:] {
		if !kubectlTypeName.MatchString(a) {
			continue
		}
		out, err := exec.Command(filepath.Join(g.tools, "kubectl"), "--kubeconfig", g.kubeconfig, "-n", namespace, "get", a).CombinedOutput()
		if err != nil {
			return fmt.Errorf("names %s, which the install did not create in %s: %s", a, namespace, out)
		}
	}
	return nil
}

// runnable: the help printed is a command's, not only a group's. A group
// that does not run (kubectl rollout, helm repo) shows only a usage line
// with SUBCOMMAND or [command]; a command (kubectl apply, which has
// subcommands too) has a usage line of its own.
func runnable(help string) bool {
	_, usage, _ := strings.Cut(help, "Usage:\n")
	for _, line := range strings.Split(usage, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		if !strings.Contains(line, "SUBCOMMAND") && !strings.Contains(line, "[command]") {
			return true
		}
	}
	return false
}

var kubectlTypeName = regexp.MustCompile(`^[a-z][a-z.]*/[a-z0-9][a-z0-9.-]*$`)

// checkCurlOptions: every option is one curl has.
func checkCurlOptions(args []string) error {
	help, err := exec.Command("curl", "--help", "all").Output()
	if err != nil {
		return fmt.Errorf("curl --help all: %w", err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:(-[a-zA-Z0-9#:]),\s*)?(--[a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		known[m[1]], known[m[2]] = m[1] != "", true
	}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--"):
			if !known[a] {
				return fmt.Errorf("curl has no option %s", a)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				if !known["-"+string(c)] {
					return fmt.Errorf("curl has no option -%c (in %s)", c, a)
				}
			}
		}
	}
	return nil
}
