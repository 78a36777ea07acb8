package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
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
)

// cluster is one running API server with Gatehouse admitting into it.
type cluster struct {
	env        *envtest.Environment
	client     client.Client
	kubectl    string
	adminCfg   string // kubeconfig paths
	tenantCfg  string
	dir        string
	controller *exec.Cmd
	logs       *processLog
	bin        string // the gatehouse binary under test
	agentAddr  string // the controller's gRPC endpoint for agents
	adminURL   string // the controller's metrics port
	debugURL   string // the controller's --debug-bind-address (serves /debug/agents)
}

var shared *cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: set up:", err)
		if c != nil {
			fmt.Fprintf(os.Stderr, "--- gatehouse controller log ---\n%s\n", c.logs.String())
			c.stop()
		}
		return 1
	}
	shared = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- gatehouse controller log ---\n%s\n", c.logs.String())
	}
	c.stop()
	return code
}

func start() (*cluster, error) {
	dir, err := testkit.Assets()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gatehouse-e2e-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: tmp, kubectl: filepath.Join(dir, "kubectl"), logs: &processLog{}}
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
	if err := c.startController(); err != nil {
		return c, err
	}
	return c, nil
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

// controllerKubeconfig is a kubeconfig for the gatehouse-controller
// ServiceAccount, with a token from the TokenRequest API, as the Pod would
// have.
func (c *cluster) controllerKubeconfig() (string, error) {
	return c.serviceAccountKubeconfig("gatehouse-system", "gatehouse-controller")
}

// serviceAccountKubeconfig is a kubeconfig for a ServiceAccount.
func (c *cluster) serviceAccountKubeconfig(namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	expiry := int64(4 * 3600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := c.client.SubResource("token").Create(context.Background(), sa, tr); err != nil {
		return "", fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "gatehouse",
		"clusters": []any{map[string]any{"name": "envtest", "cluster": map[string]any{
			"server": c.env.Config.Host, "certificate-authority-data": c.env.Config.CAData}}},
		"users":    []any{map[string]any{"name": name, "user": map[string]any{"token": tr.Status.Token}}},
		"contexts": []any{map[string]any{"name": "gatehouse", "context": map[string]any{"cluster": "envtest", "user": name}}},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// startController builds gatehouse, registers the shipped webhook
// configuration (pointed at 127.0.0.1 instead of the in-cluster Service),
// and runs `gatehouse controller` with a self-managed certificate.
func (c *cluster) startController() error {
	bin := filepath.Join(c.dir, "gatehouse")
	c.bin = bin
	build := exec.Command("go", "build", "-o", bin, "../../cmd/gatehouse")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build gatehouse: %w\n%s", err, out)
	}
	port, err := testkit.FreePort()
	if err != nil {
		return err
	}
	probePort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	agentPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	metricsPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	debugPort, err := testkit.FreePort()
	if err != nil {
		return err
	}
	c.agentAddr = fmt.Sprintf("127.0.0.1:%d", agentPort)
	c.adminURL = fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	c.debugURL = fmt.Sprintf("http://127.0.0.1:%d", debugPort)
	kubeconfig, err := c.controllerKubeconfig()
	if err != nil {
		return err
	}
	if err := c.registerWebhook(port); err != nil {
		return err
	}
	c.controller = exec.Command(bin, "controller",
		"--kubeconfig", kubeconfig,
		"--namespace", "gatehouse-system",
		"--control-plane-namespace", "argocd",
		"--webhook-port", fmt.Sprint(port),
		"--webhook-cert-dir", filepath.Join(c.dir, "certs"),
		"--webhook-cert-extra-hosts", "127.0.0.1",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--agent-bind-address", c.agentAddr,
		"--debug-bind-address", fmt.Sprintf("127.0.0.1:%d", debugPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort),
		"--log-level", "debug", "--log-format", "text")
	c.controller.Stdout, c.controller.Stderr = c.logs, c.logs
	if err := c.controller.Start(); err != nil {
		return fmt.Errorf("start gatehouse controller: %w", err)
	}
	return testkit.WaitHTTP(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort), 60*time.Second)
}

func (c *cluster) registerWebhook(port int) error {
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
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *svc.Path)
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	return c.client.Create(context.Background(), &cfg)
}

func (c *cluster) stop() {
	if c.controller != nil && c.controller.Process != nil {
		_ = c.controller.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = c.controller.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.controller.Process.Kill()
		}
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
	_ = os.RemoveAll(c.dir)
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
