package helm

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	controllerKey = "apps/v1 Deployment gatehouse-system/gatehouse-controller"
	proxyKey      = "apps/v1 Deployment gatehouse-system/gatehouse-proxy"
	hpaKey        = "autoscaling/v2 HorizontalPodAutoscaler gatehouse-system/gatehouse-proxy"
	proxyPDBKey   = "policy/v1 PodDisruptionBudget gatehouse-system/gatehouse-proxy"
	ctrlPDBKey    = "policy/v1 PodDisruptionBudget gatehouse-system/gatehouse-controller"
	quotaKey      = "v1 ResourceQuota gatehouse-system/gatehouse-critical-pods"
)

// want is one field a value must set: the object, the path in it, the value.
type want struct {
	object, path string
	value        any
}

// TestValuesRenderWhereExpected: each value the manifests have no variant
// for lands where it must, and only there.
func TestValuesRenderWhereExpected(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  map[string]any
		want []want
	}{
		{name: "image", set: map[string]any{"image.registry": "registry.example:5000/mirror", "image.tag": "v9.9.9", "image.pullPolicy": "Always"},
			want: []want{
				{controllerKey, "spec.template.spec.containers.0.image", "registry.example:5000/mirror/gatehouse:v9.9.9"},
				{controllerKey, "spec.template.spec.containers.0.imagePullPolicy", "Always"},
				{proxyKey, "spec.template.spec.containers.0.image", "registry.example:5000/mirror/gatehouse-proxy:v9.9.9"},
				{proxyKey, "spec.template.spec.containers.0.imagePullPolicy", "Always"},
				{proxyKey, "spec.template.spec.initContainers.0.image", "registry.example:5000/mirror/gatehouse-agent:v9.9.9"},
				{proxyKey, "spec.template.spec.initContainers.0.imagePullPolicy", "Always"},
			}},
		{name: "replicas and resources", set: map[string]any{
			"controller.replicas":  3,
			"controller.resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
			"proxy.resources":      map[string]any{"limits": map[string]any{"memory": "1Gi"}},
			"agent.resources":      map[string]any{"limits": map[string]any{"memory": "99Mi"}},
		}, want: []want{
			{controllerKey, "spec.replicas", float64(3)},
			// Helm merges a map with the default's: what is not set keeps
			// its default.
			{controllerKey, "spec.template.spec.containers.0.resources", map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}}},
			{proxyKey, "spec.template.spec.containers.0.resources", map[string]any{
				"requests": map[string]any{"cpu": "200m", "memory": "64Mi"}, "limits": map[string]any{"memory": "1Gi"}}},
			{proxyKey, "spec.template.spec.initContainers.0.resources", map[string]any{
				"requests": map[string]any{"cpu": "20m", "memory": "32Mi"}, "limits": map[string]any{"memory": "99Mi"}}},
		}},
		{name: "scheduling", set: map[string]any{
			"controller.priorityClassName": "gatehouse-high",
			"controller.nodeSelector":      map[string]any{"pool": "system"},
			"controller.tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
			"proxy.priorityClassName":      "gatehouse-proxy",
			"proxy.nodeSelector":           map[string]any{"pool": "edge"},
			"proxy.affinity":               map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}}}}}},
		}, want: []want{
			{controllerKey, "spec.template.spec.priorityClassName", "gatehouse-high"},
			{controllerKey, "spec.template.spec.nodeSelector", map[string]any{"pool": "system"}},
			{controllerKey, "spec.template.spec.tolerations", []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}}},
			{proxyKey, "spec.template.spec.priorityClassName", "gatehouse-proxy"},
			{proxyKey, "spec.template.spec.nodeSelector", map[string]any{"pool": "edge"}},
			{proxyKey, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0.matchExpressions.0.key", "zone"},
		}},
		{name: "autoscaling", set: map[string]any{"proxy.autoscaling.minReplicas": 3, "proxy.autoscaling.maxReplicas": 30, "proxy.autoscaling.targetCPUUtilizationPercentage": 50},
			want: []want{
				{hpaKey, "spec.minReplicas", float64(3)},
				{hpaKey, "spec.maxReplicas", float64(30)},
				{hpaKey, "spec.metrics.0.containerResource.target.averageUtilization", float64(50)},
			}},
		{name: "autoscaling off", set: map[string]any{"proxy.autoscaling.enabled": false, "proxy.replicas": 4},
			want: []want{{proxyKey, "spec.replicas", float64(4)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := mustRender(t, tt.set)
			for _, w := range tt.want {
				obj, ok := objs[w.object]
				if !ok {
					t.Errorf("no %s rendered", w.object)
					continue
				}
				got, err := field(obj, w.path)
				if err != nil {
					t.Errorf("%s %s: %v", w.object, w.path, err)
					continue
				}
				if !reflect.DeepEqual(got, w.value) {
					t.Errorf("%s %s = %s, want %s", w.object, w.path, show(got), show(w.value))
				}
			}
		})
	}
}

// TestAutoscalingOff: without the autoscaler there is no
// HorizontalPodAutoscaler, and the Deployment's replicas come from
// proxy.replicas; with it, the Deployment sets none (an upgrade would reset
// what the autoscaler chose).
func TestAutoscalingOff(t *testing.T) {
	on := mustRender(t, nil)
	if _, err := field(on[proxyKey], "spec.replicas"); err == nil {
		t.Errorf("with the autoscaler, %s sets spec.replicas", proxyKey)
	}
	off := mustRender(t, map[string]any{"proxy.autoscaling.enabled": false})
	if _, ok := off[hpaKey]; ok {
		t.Errorf("proxy.autoscaling.enabled=false still renders %s", hpaKey)
	}
	if got, err := field(off[proxyKey], "spec.replicas"); err != nil || got != float64(2) {
		t.Errorf("without the autoscaler %s spec.replicas = %v (%v), want proxy.replicas' default 2", proxyKey, got, err)
	}
}

// TestSingleReplicaHasNoBudget: a PodDisruptionBudget of one available Pod
// over a single replica would block every node drain, so it is rendered
// only when more than one Pod runs.
func TestSingleReplicaHasNoBudget(t *testing.T) {
	objs := mustRender(t, map[string]any{"controller.replicas": 1, "proxy.autoscaling.enabled": false, "proxy.replicas": 1})
	for _, k := range []string{ctrlPDBKey, proxyPDBKey} {
		if _, ok := objs[k]; ok {
			t.Errorf("one replica, and still %s", k)
		}
	}
	objs = mustRender(t, map[string]any{"proxy.autoscaling.minReplicas": 1})
	if _, ok := objs[proxyPDBKey]; ok {
		t.Errorf("an autoscaler down to one replica, and still %s", proxyPDBKey)
	}
}

// TestCriticalPriorityQuota: the ResourceQuota that admits critical Pods
// comes with a critical priority class and goes without one.
func TestCriticalPriorityQuota(t *testing.T) {
	if _, ok := mustRender(t, map[string]any{"controller.priorityClassName": ""})[quotaKey]; ok {
		t.Errorf("no critical priority class, and still %s", quotaKey)
	}
	objs := mustRender(t, map[string]any{"controller.priorityClassName": "", "proxy.priorityClassName": "system-node-critical"})
	if _, ok := objs[quotaKey]; !ok {
		t.Errorf("the proxy runs as system-node-critical, and no %s", quotaKey)
	}
	if _, err := field(objs[controllerKey], "spec.template.spec.priorityClassName"); err == nil {
		t.Errorf("controller.priorityClassName empty, and the controller still names a priority class")
	}
}

// TestExtraArgsAndTracing: extraArgs come after each component's own
// arguments, and tracing.otlpEndpoint adds --otlp-endpoint to the
// controller and the proxy (the agent has no traces), and nothing when
// empty.
func TestExtraArgsAndTracing(t *testing.T) {
	objs := mustRender(t, map[string]any{
		"controller.extraArgs": []any{"--log-format=json"},
		"proxy.extraArgs":      []any{"--policy-eval-timeout=2s"},
		"agent.extraArgs":      []any{"--stale-after=2m"},
		"tracing.otlpEndpoint": "otel-collector.observability.svc:4317",
	})
	const otlp = "--otlp-endpoint=otel-collector.observability.svc:4317"
	controller := container(t, objs[controllerKey], "containers", "controller")
	proxy := container(t, objs[proxyKey], "containers", "proxy")
	agent := container(t, objs[proxyKey], "initContainers", "agent")
	for _, c := range []struct {
		name  string
		args  []string
		tail  []string
		trace bool
	}{
		{"controller", args(controller), []string{otlp, "--log-format=json"}, true},
		{"proxy", args(proxy), []string{otlp, "--policy-eval-timeout=2s"}, true},
		{"agent", args(agent), []string{"--stale-after=2m"}, false},
	} {
		if !slices.Equal(c.args[len(c.args)-len(c.tail):], c.tail) {
			t.Errorf("the %s's arguments end %q, want %q", c.name, c.args, c.tail)
		}
		if !c.trace && slices.ContainsFunc(c.args, func(a string) bool { return strings.HasPrefix(a, "--otlp-endpoint") }) {
			t.Errorf("the %s runs with %q: it has no --otlp-endpoint", c.name, c.args)
		}
	}
	defaults := mustRender(t, nil)
	for _, c := range []map[string]any{
		container(t, defaults[controllerKey], "containers", "controller"),
		container(t, defaults[proxyKey], "containers", "proxy"),
	} {
		if slices.ContainsFunc(args(c), func(a string) bool { return strings.HasPrefix(a, "--otlp-endpoint") }) {
			t.Errorf("tracing off by default, and %q", args(c))
		}
	}
}

// TestReleaseNamespaceMovesEverything: installed into another namespace,
// with every optional object rendered, nothing names gatehouse-system: no
// object, Service address, certificate name, selector or query.
func TestReleaseNamespaceMovesEverything(t *testing.T) {
	objs, err := renderChartIn(t, "tenant-gates", map[string]any{
		"certificates.certManager.enabled": true, "monitoring.enabled": true, "namespace.create": true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range sortedKeys(objs) {
		if js := show(objs[k]); strings.Contains(fullJSON(t, objs[k]), "gatehouse-system") {
			t.Errorf("installed in tenant-gates, %s still names gatehouse-system: %s", k, js)
		}
	}
}
