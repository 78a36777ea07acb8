package controllercli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// With --log-format=json, what client-go (klog) and controller-runtime log
// is JSON too: leader election against a real kube-apiserver, klog's
// structured and printf calls, client-go's error handler, and
// controller-runtime's logger. Not a line in another format.
func TestLibraryLogsAreJSON(t *testing.T) {
	cfg, _ := apiServer(t)
	logs := &testkit.LogBuffer{}
	o := logflags.Options{Level: "info", Format: "json"}
	routeLibraryLogs(slog.New(o.Handler(logs)))
	t.Cleanup(klog.ClearLogger)

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "default", Name: "gatehouse-controller"},
		Client: cs.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "replica-a"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	led := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: lock, Name: "gatehouse-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(led) }, OnStoppedLeading: func() {}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { le.Run(ctx); close(done) }()
	select {
	case <-led:
	case <-ctx.Done():
		t.Fatalf("never led:\n%s", logs.String())
	}
	cancel()
	<-done

	klog.InfoS("structured", "took", 1500*time.Millisecond)
	klog.Infof("printf with\na second line %d", 2)
	klog.ErrorS(errors.New("boom"), "an error")
	utilruntime.HandleError(errors.New("handled"))
	ctrl.Log.WithName("manager").Info("from controller-runtime", "retryIn", 2*time.Second)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not a JSON line: %q", l)
		}
	}
	for _, want := range []string{`"msg":"Attempting to acquire leader lease...","lock":"default/gatehouse-controller"`, `"msg":"Successfully acquired lease"`,
		`"msg":"structured","took":"1.5s"`, `printf with\na second line 2`, `"msg":"an error"`, `handled`,
		`"msg":"from controller-runtime","logger":"manager","retryIn":"2s"`} {
		if !bytes.Contains([]byte(logs.String()), []byte(want)) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
}
