package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// cluster is one running API server with Gatehouse admitting into it.
type cluster struct {
	env       *envtest.Environment
	client    client.Client
	kubectl   string
	adminCfg  string // kubeconfig paths
	tenantCfg string
	dir       string
	// controller is the one replica the shared cluster runs; the full-stack
	// test runs its own.
	controller *controllerProc
	logs       *testkit.LogBuffer
	bin        string // the gatehouse binary under test
	agentAddr  string // the controller's gRPC endpoint for agents
	adminURL   string // the controller's metrics port
	debugURL   string // the controller's --debug-bind-address (serves /debug/agents)
}

var shared *cluster

// sharedFailed is set when a test that used the shared cluster failed: only
// then is the shared controller's log worth printing. Printed after every
// other test's output, it would otherwise bury the failure that matters
// (CI shows the end of the output).
var sharedFailed atomic.Bool

// sharedCluster returns the shared cluster and notes if the test fails.
func sharedCluster(t testing.TB) *cluster {
	t.Cleanup(func() {
		if t.Failed() {
			sharedFailed.Store(true)
		}
	})
	return shared
}

func TestMain(m *testing.M) {
	flag.Parse() // -e2e.bin-dir is read before m.Run
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: set up:", err)
		if c != nil {
			if c.logs != nil {
				fmt.Fprintf(os.Stderr, "--- gatehouse controller log ---\n%s\n", c.logs.String())
			}
			c.stop()
		}
		return 1
	}
	shared = c
	code := m.Run()
	if sharedFailed.Load() {
		fmt.Fprintf(os.Stderr, "--- the shared cluster's gatehouse controller log ---\n%s\n", c.logs.String())
	}
	c.stop()
	return code
}

func start() (*cluster, error) {
	c, err := newCluster()
	if err != nil {
		return c, err
	}
	if c.bin, err = buildBinaries(); err != nil {
		return c, err
	}
	if err := c.startController(); err != nil {
		return c, err
	}
	return c, nil
}

// newCluster starts an API server and etcd with Argo CD's and Gatehouse's
// CRDs, with an administrator, a tenant (alice) and the shipped RBAC, and
// no Gatehouse running.
func newCluster() (*cluster, error) {
	dir, err := testkit.Assets()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gatehouse-e2e-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: tmp, kubectl: filepath.Join(dir, "kubectl")}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{"testdata/crds", "../../manifests/base/crds"},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := c.env.Start()
	if err != nil {
		return c, fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	if c.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	if c.adminCfg, err = c.kubeconfig("admin", []string{"system:masters"}); err != nil {
		return c, err
	}
	if c.tenantCfg, err = c.kubeconfig("alice", []string{"team-a-devs"}); err != nil {
		return c, err
	}
	if err := c.seed(); err != nil {
		return c, fmt.Errorf("create namespaces, RBAC and settings: %w", err)
	}
	return c, nil
}

// binaries are the programs the tests run, built once per test binary:
// gatehouse (every subcommand), and the sidecar's and the proxy image's
// own binaries.
var binaries struct {
	dir                   string
	gatehouse, agent, prx string
}

// prebuiltBins names a directory of the three binaries built beforehand, so
// that a benchmark run under the bench lock (BenchmarkFullStackSoak)
// measures instead of compiling.
var prebuiltBins = flag.String("e2e.bin-dir", "",
	"use the gatehouse, gatehouse-agent and gatehouse-proxy binaries in this directory instead of building them (go build -o DIR/ ./cmd/gatehouse ./cmd/gatehouse-agent ./cmd/gatehouse-proxy)")

// buildBinaries builds the three binaries in parallel (or takes those of
// -e2e.bin-dir) and returns gatehouse's path.
func buildBinaries() (string, error) {
	if dir := *prebuiltBins; dir != "" {
		binaries.gatehouse = filepath.Join(dir, "gatehouse")
		binaries.agent = filepath.Join(dir, "gatehouse-agent")
		binaries.prx = filepath.Join(dir, "gatehouse-proxy")
		for _, bin := range []string{binaries.gatehouse, binaries.agent, binaries.prx} {
			if _, err := os.Stat(bin); err != nil {
				return "", fmt.Errorf("-e2e.bin-dir: %w", err)
			}
		}
		return binaries.gatehouse, nil // binaries.dir stays empty: not removed
	}
	dir, err := os.MkdirTemp("", "gatehouse-e2e-bin-")
	if err != nil {
		return "", err
	}
	binaries.dir = dir
	binaries.gatehouse = filepath.Join(dir, "gatehouse")
	binaries.agent = filepath.Join(dir, "gatehouse-agent")
	binaries.prx = filepath.Join(dir, "gatehouse-proxy")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, b := range []struct{ out, pkg string }{
		{binaries.gatehouse, "../../cmd/gatehouse"},
		{binaries.agent, "../../cmd/gatehouse-agent"},
		{binaries.prx, "../../cmd/gatehouse-proxy"},
	} {
		wg.Go(func() {
			if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	return binaries.gatehouse, nil
}

func (c *cluster) kubeconfig(user string, groups []string) (string, error) {
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", user, err)
	}
	raw, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, user+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

func (c *cluster) seed() error {
	ctx := context.Background()
	objs := []client.Object{}
	for _, ns := range []string{"argocd", "gatehouse-system", "team-a", "team-b", "sandbox"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	objs = append(objs,
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cmd-params-cm", Namespace: "argocd"},
			Data:       map[string]string{"application.namespaces": "team-*"},
		},
		// alice may manage Applications in team-a and team-b, nothing else:
		// what stops her using other teams' projects is Gatehouse.
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "application-editor"},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			}},
		},
	)
	for _, ns := range []string{"team-a", "team-b"} {
		objs = append(objs, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a-devs", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "application-editor"},
			Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "team-a-devs"}},
		})
	}
	for _, o := range objs {
		if err := c.client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	// The controller runs as its ServiceAccount with the shipped RBAC, so
	// every test also checks that least privilege is enough.
	shipped := []string{"apply"}
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "secret.yaml"} {
		shipped = append(shipped, "-f", filepath.Join("../../manifests/base", f))
	}
	if r := c.run(c.adminCfg, "", shipped...); r.err != nil {
		return fmt.Errorf("apply the shipped RBAC: %w\n%s", r.err, r.stderr)
	}
	return nil
}

// serviceAccountToken is a token from the TokenRequest API for the
// ServiceAccount namespace/sa, bound to pod when it is given, as the
// kubelet projects one.
func (c *cluster) serviceAccountToken(ctx context.Context, namespace, sa string, audiences []string, ttl time.Duration, pod *corev1.Pod) (string, error) {
	expiry := int64(ttl.Seconds())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &expiry}}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}
	if err := c.client.SubResource("token").Create(ctx, obj, tr); err != nil {
		return "", fmt.Errorf("TokenRequest for ServiceAccount %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// controllerKubeconfig is a kubeconfig for the gatehouse-controller
// ServiceAccount, with a token from the TokenRequest API, as the Pod would
// have.
func (c *cluster) controllerKubeconfig() (string, error) {
	return c.serviceAccountKubeconfig("gatehouse-system", "gatehouse-controller")
}

// serviceAccountKubeconfig is a kubeconfig for a ServiceAccount.
func (c *cluster) serviceAccountKubeconfig(namespace, name string) (string, error) {
	token, err := c.serviceAccountToken(context.Background(), namespace, name, nil, 4*time.Hour, nil)
	if err != nil {
		return "", err
	}
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "gatehouse",
		"clusters": []any{map[string]any{"name": "envtest", "cluster": map[string]any{
			"server": c.env.Config.Host, "certificate-authority-data": c.env.Config.CAData}}},
		"users":    []any{map[string]any{"name": name, "user": map[string]any{"token": token}}},
		"contexts": []any{map[string]any{"name": "gatehouse", "context": map[string]any{"cluster": "envtest", "user": name}}},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// startController registers the shipped webhook configuration (pointed at
// 127.0.0.1 instead of the in-cluster Service) and runs `gatehouse
// controller` with a self-managed certificate.
func (c *cluster) startController() error {
	kubeconfig, err := c.controllerKubeconfig()
	if err != nil {
		return err
	}
	p, err := newControllerProc(c.bin, kubeconfig, filepath.Join(c.dir, "certs"))
	if err != nil {
		return err
	}
	c.controller, c.logs = p, p.logs
	c.agentAddr, c.adminURL, c.debugURL = p.agentAddr(), p.metricsURL(), p.debugURL()
	if err := c.registerWebhook(fmt.Sprintf("127.0.0.1:%d", p.webhookPort)); err != nil {
		return err
	}
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady(60 * time.Second)
}

// registerWebhook creates the shipped ValidatingWebhookConfiguration with
// every webhook pointed at https://hostPort instead of the Service.
func (c *cluster) registerWebhook(hostPort string) error {
	raw, err := os.ReadFile("../../manifests/base/webhook.yaml")
	if err != nil {
		return err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return fmt.Errorf("decode manifests/base/webhook.yaml: %w", err)
	}
	for i := range cfg.Webhooks {
		svc := cfg.Webhooks[i].ClientConfig.Service
		url := fmt.Sprintf("https://%s%s", hostPort, *svc.Path)
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	return c.client.Create(context.Background(), &cfg)
}

func (c *cluster) stop() {
	if c.controller != nil {
		c.controller.stop()
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
	_ = os.RemoveAll(c.dir)
	if binaries.dir != "" && c == shared {
		_ = os.RemoveAll(binaries.dir)
	}
}

// controllerProc is one replica of `gatehouse controller`, on ports of its
// own; a replica restarted (as a new Pod would be) gets new ones.
type controllerProc struct {
	bin, kubeconfig, certDir string
	extraArgs                []string
	webhookPort, agentPort   int
	metricsPort, probePort   int
	debugPort                int
	cmd                      *exec.Cmd
	exited                   chan struct{}
	logs                     *testkit.LogBuffer
}

func newControllerProc(bin, kubeconfig, certDir string, extraArgs ...string) (*controllerProc, error) {
	p := &controllerProc{bin: bin, kubeconfig: kubeconfig, certDir: certDir, extraArgs: extraArgs, logs: &testkit.LogBuffer{}}
	return p, p.choosePorts()
}

func (p *controllerProc) choosePorts() error {
	for _, port := range []*int{&p.webhookPort, &p.agentPort, &p.metricsPort, &p.probePort, &p.debugPort} {
		n, err := testkit.FreePort()
		if err != nil {
			return err
		}
		*port = n
	}
	return nil
}

func (p *controllerProc) agentAddr() string { return fmt.Sprintf("127.0.0.1:%d", p.agentPort) }

// metricsURL is HTTPS: the controller serves its metrics with its own
// certificate (--metrics-secure, on by default).
func (p *controllerProc) metricsURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", p.metricsPort)
}
func (p *controllerProc) debugURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.debugPort) }
func (p *controllerProc) webhookAddr() string {
	return fmt.Sprintf("127.0.0.1:%d", p.webhookPort)
}

func (p *controllerProc) start() error {
	args := []string{"controller",
		"--kubeconfig", p.kubeconfig,
		"--namespace", "gatehouse-system",
		"--control-plane-namespace", "argocd",
		"--webhook-port", fmt.Sprint(p.webhookPort),
		"--webhook-cert-dir", p.certDir,
		"--webhook-cert-extra-hosts", "127.0.0.1",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", p.metricsPort),
		"--agent-bind-address", p.agentAddr(),
		"--debug-bind-address", fmt.Sprintf("127.0.0.1:%d", p.debugPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", p.probePort),
		"--log-level", "debug", "--log-format", "text"}
	p.cmd = exec.Command(p.bin, append(args, p.extraArgs...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start gatehouse controller: %w", err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.cmd, p.exited)
	return nil
}

func (p *controllerProc) waitReady(limit time.Duration) error {
	return testkit.WaitHTTP(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.probePort), limit)
}

// kill ends the replica at once, as a node failure or an OOM kill would:
// no stream is closed cleanly and the Lease is not released.
func (p *controllerProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the replica as the kubelet does: SIGTERM, then SIGKILL.
func (p *controllerProc) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// kubectlResult is what a kubectl run printed.
type kubectlResult struct {
	stdout, stderr string
	err            error
}

// kubectl runs the real kubectl with the given kubeconfig; stdin is an
// optional manifest for `-f -`.
func (c *cluster) run(kubeconfig, stdin string, args ...string) kubectlResult {
	cmd := exec.Command(c.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return kubectlResult{stdout: out.String(), stderr: errb.String(), err: err}
}
