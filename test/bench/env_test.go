package bench

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// cluster is kube-apiserver + etcd holding the benchmark's population, and
// what a webhook server needs to join it.
type cluster struct {
	env        *envtest.Environment
	dir        string // temporary: kubeconfig, serving certificate
	kubeconfig string
	certDir    string
	caPool     *x509.CertPool
	seeded     time.Duration
	client     client.Client // unthrottled
}

var (
	sharedOnce    sync.Once
	sharedCluster *cluster
	sharedErr     error
)

// getCluster starts the cluster on first use; TestMain stops it.
func getCluster() (*cluster, error) {
	sharedOnce.Do(func() {
		sharedCluster, sharedErr = startCluster()
		if sharedErr != nil && sharedCluster != nil {
			sharedCluster.stop()
			sharedCluster = nil
		}
	})
	return sharedCluster, sharedErr
}

func startCluster() (*cluster, error) { return startClusterWith(seed) }

// startClusterWith is startCluster with another population; seedFn gets a
// client without a client-side rate limit.
func startClusterWith(seedFn func(context.Context, client.Client) error) (*cluster, error) {
	bin, err := testkit.Assets()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gatehouse-bench-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, certDir: filepath.Join(dir, "certs")}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{"../e2e/testdata/crds", "../../manifests/base/crds"}, // Argo CD's, and Gatehouse's PolicyBundle, which the controller watches
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := c.env.Start()
	if err != nil {
		return c, fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	user, err := c.env.AddUser(envtest.User{Name: "gatehouse", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return c, err
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return c, err
	}
	c.kubeconfig = filepath.Join(dir, "gatehouse.kubeconfig")
	if err := os.WriteFile(c.kubeconfig, raw, 0o600); err != nil {
		return c, err
	}
	files, err := testkit.WriteServingFiles(c.certDir)
	if err != nil {
		return c, fmt.Errorf("issue serving certificate: %w", err)
	}
	c.caPool = files.CA.Pool()
	// The default client-side rate limit (20 QPS) would make seeding take
	// ten minutes; the API server is ours alone.
	cfg.QPS, cfg.Burst = -1, 0
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return c, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return c, err
	}
	c.client = cl
	start := time.Now()
	if err := seedFn(context.Background(), cl); err != nil {
		return c, fmt.Errorf("seed cluster: %w", err)
	}
	c.seeded = time.Since(start)
	return c, nil
}

func (c *cluster) stop() {
	if c.env != nil {
		_ = c.env.Stop()
	}
	_ = os.RemoveAll(c.dir)
}

// seed creates the namespaces, Argo CD's settings, 1,000 AppProjects and
// 10,000 Applications (with status, managedFields and last-applied, as in a
// real cluster) with a few workers in parallel.
func seed(ctx context.Context, cl client.Client) error {
	if err := seedSettings(ctx, cl); err != nil {
		return err
	}
	var objs []map[string]any
	for i := range numProjects {
		objs = append(objs, withLastApplied(projectManifest(i)))
	}
	for i := range numProjects {
		for j := range appsPerProject {
			app := withLastApplied(applicationManifest(i, j, appName(i, j)))
			app["status"] = applicationStatus(i, j, 40)
			objs = append(objs, app)
		}
	}
	return createAll(ctx, cl, objs, 8)
}

// seedSettings creates the namespaces, Argo CD's settings and the control
// plane's objects (seedControlPlane).
func seedSettings(ctx context.Context, cl client.Client) error {
	for _, ns := range namespaces() {
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	cms := []*corev1.ConfigMap{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cmd-params-cm", Namespace: controlPlane},
			Data: map[string]string{
				"application.namespaces":                 applicationNamespaces,
				"controller.status.processors":           "50",
				"controller.operation.processors":        "25",
				"server.insecure":                        "false",
				"reposerver.parallelism.limit":           "10",
				"applicationsetcontroller.policy":        "sync",
				"controller.sharding.algorithm":          "round-robin",
				"controller.diff.server.side":            "true",
				"controller.resource.health.persist":     "false",
				"server.enable.gzip":                     "true",
				"applicationsetcontroller.enable.leader": "true",
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: controlPlane},
			Data: map[string]string{
				"url":                    "https://argocd.example.com",
				"timeout.reconciliation": "180s",
				"resource.exclusions":    "- apiGroups: [cilium.io]\n  kinds: [CiliumIdentity]\n  clusters: ['*']\n",
				"admin.enabled":          "false",
			},
		},
	}
	for _, cm := range cms {
		if err := cl.Create(ctx, cm); err != nil {
			return err
		}
	}
	return seedControlPlane(ctx, cl)
}

// createAll creates objs with workers in parallel, as kubectl's client-side
// apply would (the field owner).
func createAll(ctx context.Context, cl client.Client, objs []map[string]any, workers int) error {
	var next atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(objs) {
					return
				}
				u := &unstructured.Unstructured{Object: objs[n]}
				if err := cl.Create(ctx, u, client.FieldOwner("kubectl-client-side-apply")); err != nil {
					errs <- fmt.Errorf("create %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
					next.Store(int64(len(objs)))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
