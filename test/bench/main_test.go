package bench

import (
	"flag"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var cpuProfileDir = flag.String("gatehouse.cpuprofile", "",
	"directory for CPU and allocation profiles of the webhook server, per review kind, taken during the conns=16 runs")

func TestMain(m *testing.M) {
	if os.Getenv(envServerRole) != "" {
		// Re-executed by startServerProc: be the webhook server.
		os.Exit(serverMain())
	}
	// Quiet controller-runtime's warning about a missing logger (envtest and
	// the in-process handlers log nothing worth reading here).
	ctrllog.SetLogger(logr.Discard())
	// The cluster and the server start lazily, in the first benchmark that
	// needs them, so `go test` without -bench costs nothing here.
	code := m.Run()
	stopShared()
	os.Exit(code)
}

// benchEnv is the cluster with the webhook server running against it.
type benchEnv struct {
	cluster *cluster
	srv     *serverProc
	// afterGC is the server right after sync and a forced collection.
	afterGC procStats
	// bodies holds distinctBodies AdmissionReviews per review kind.
	bodies map[string][][]byte
}

const distinctBodies = 64

var (
	envOnce   sync.Once
	sharedEnv *benchEnv
	envErr    error
)

func getEnv(b *testing.B) *benchEnv {
	b.Helper()
	envOnce.Do(func() {
		c, err := getCluster()
		if err != nil {
			envErr = err
			return
		}
		srv, err := startServerProc(c)
		if err != nil {
			envErr = err
			return
		}
		e := &benchEnv{cluster: c, srv: srv, bodies: map[string][][]byte{}}
		if e.afterGC, err = srv.do("gc"); err != nil {
			srv.stop()
			envErr = err
			return
		}
		for _, k := range reviewKinds {
			e.bodies[k.name] = k.bodies(distinctBodies)
		}
		sharedEnv = e
	})
	if envErr != nil {
		b.Fatal(envErr)
	}
	return sharedEnv
}

func stopShared() {
	if sharedEnv != nil {
		sharedEnv.srv.stop()
	}
	if sharedCluster != nil {
		sharedCluster.stop()
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func mbu(n uint64) float64 { return float64(n) / (1 << 20) }
