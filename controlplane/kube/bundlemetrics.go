package kube

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// reasonUnknown labels a PolicyBundle with no Ready condition yet: the
// elected replica has not reconciled it (or there is none).
const reasonUnknown = "Unknown"

var descBundleReady = prometheus.NewDesc("gatehouse_controlplane_policybundle_ready",
	"1 while a PolicyBundle's Ready condition is True, else 0; reason is the condition's (Unknown before the first reconcile). What kubectl get policybundles shows.",
	[]string{"policybundle", "reason"}, nil)

// NewBundleStatusCollector exports each PolicyBundle's Ready condition in
// namespace, read from reader (the watch cache) when scraped. Every replica
// exports the same values, elected or not, so an alert holds whichever
// replica Prometheus reaches.
func NewBundleStatusCollector(reader client.Reader, namespace string) prometheus.Collector {
	return bundleStatusCollector{reader: reader, ns: namespace}
}

type bundleStatusCollector struct {
	reader client.Reader
	ns     string
}

func (c bundleStatusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descBundleReady }

func (c bundleStatusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list gatehousev1.PolicyBundleList
	if err := c.reader.List(ctx, &list, client.InNamespace(c.ns)); err != nil {
		ch <- prometheus.NewInvalidMetric(descBundleReady, err)
		return
	}
	for _, b := range list.Items {
		value, reason := 0.0, reasonUnknown
		if cond := meta.FindStatusCondition(b.Status.Conditions, gatehousev1.ConditionReady); cond != nil {
			reason = cond.Reason
			if cond.Status == "True" {
				value = 1
			}
		}
		ch <- prometheus.MustNewConstMetric(descBundleReady, prometheus.GaugeValue, value, b.Name, reason)
	}
}
