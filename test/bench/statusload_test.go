package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// statusLoad is issue 4's "100 status-only updates/s": what Argo CD's
// application controller does all day. It patches the status (a full,
// realistic one, about 4 KB) and a refresh annotation of Applications in
// turn, at rate per second for d, and returns the controller's CPU over
// that window and over an idle window of the same length just before.
func statusLoad(c *cluster, pid, rate int, d time.Duration) (idle, busy time.Duration, sent int, err error) {
	cfg := *c.env.Config
	cfg.QPS, cfg.Burst = -1, 0
	cl, err := client.New(&cfg, client.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	window := func(load bool) (time.Duration, error) {
		before, err := testkit.CPUOf(pid)
		if err != nil {
			return 0, err
		}
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			if !load {
				continue
			}
			i, j := sent%numProjects, (sent/numProjects)%appsPerProject
			patch, err := json.Marshal(map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": fmt.Sprint(sent)}},
				"status":   applicationStatus(i, j, 1000+sent),
			})
			if err != nil {
				return 0, err
			}
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(apiVersion)
			u.SetKind("Application")
			u.SetNamespace(appNamespace(i, j))
			u.SetName(appName(i, j))
			if err := cl.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return 0, fmt.Errorf("patch status of %s: %w", u.GetName(), err)
			}
			sent++
		}
		after, err := testkit.CPUOf(pid)
		return after - before, err
	}
	if idle, err = window(false); err != nil {
		return 0, 0, 0, err
	}
	busy, err = window(true)
	return idle, busy, sent, err
}

// fetchProfile saves the profile url serves into file.
func fetchProfile(url, file string) error {
	resp, err := http.Get(url) //nolint:noctx // loopback, bounded by the profile's duration
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
