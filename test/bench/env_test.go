package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// assets returns the directory with kube-apiserver and etcd, building them
// with test/tools/install.sh when KUBEBUILDER_ASSETS is not set.
func assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command("../tools/install.sh").Output()
	if err != nil {
		return "", fmt.Errorf("build test binaries with test/tools/install.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func startCluster() (*cluster, error) {
	bin, err := assets()
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
		CRDDirectoryPaths:     []string{"../e2e/testdata/crds"},
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
	if c.caPool, err = writeServingCert(c.certDir); err != nil {
		return c, fmt.Errorf("issue serving certificate: %w", err)
	}
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
	start := time.Now()
	if err := seed(context.Background(), cl); err != nil {
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
	const workers = 8
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

// writeServingCert writes tls.crt and tls.key for 127.0.0.1, signed by a
// fresh CA (ECDSA P-256, as Gatehouse's own certificates), and returns a
// pool trusting that CA.
func writeServingCert(dir string) (*x509.CertPool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gatehouse-bench-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
