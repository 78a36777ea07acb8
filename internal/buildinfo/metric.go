package buildinfo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricName is the build's gauge on every component's /metrics.
const MetricName = "gatehouse_build_info"

// Register adds gatehouse_build_info{component,version,commit,...} 1 to reg,
// the way Kubernetes components and Argo CD expose their builds: dashboards
// and alerts join on it to tell which release serves.
func Register(reg prometheus.Registerer, component string) error {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: MetricName,
		Help: "The build of this Gatehouse component: always 1, its identity in the labels.",
		ConstLabels: prometheus.Labels{
			"component":       component,
			"version":         i.Version,
			"commit":          i.Commit,
			"build_date":      i.BuildDate,
			"go_version":      i.GoVersion,
			"opa_version":     i.OPAVersion,
			"snapshot_schema": strconv.Itoa(i.SnapshotSchema),
		},
	})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			return nil // a second run in one process (tests, gatehouse dev): the same series
		}
		return fmt.Errorf("register %s: %w", MetricName, err)
	}
	return nil
}
