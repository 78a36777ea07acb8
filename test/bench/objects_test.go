package bench

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The population the webhook's cache holds during the benchmark: 1,000
// AppProjects in the control-plane namespace and 10 Applications per project
// spread over 90 team namespaces and 10 shared ones. Project i permits its
// team namespace and shared-*; every fourth project carries a quota, so
// CREATEs of its Applications also list the project's Applications through
// the cache index.
const (
	controlPlane   = "argocd"
	numProjects    = 1000
	appsPerProject = 10
	numTeams       = 90
	numShared      = 10
	quotaEvery     = 4
	apiVersion     = "argoproj.io/v1alpha1"
	// applicationNamespaces is application.namespaces in argocd-cmd-params-cm.
	applicationNamespaces = "team-*,shared-*"
)

var components = [appsPerProject]string{"api", "web", "worker", "db-migrate", "cache", "gateway", "auth", "metrics", "cron", "docs"}

// epoch makes every generated timestamp and UID reproducible.
var epoch = time.Date(2025, 6, 2, 9, 30, 0, 0, time.UTC)

func projectName(i int) string { return fmt.Sprintf("proj-%04d", i) }
func teamOf(i int) string      { return fmt.Sprintf("team-%02d", i%numTeams) }

func appNamespace(i, j int) string {
	if j < 8 {
		return teamOf(i)
	}
	return fmt.Sprintf("shared-%d", (i+j)%numShared)
}

func appName(i, j int) string { return projectName(i) + "-" + components[j] }

func namespaces() []string {
	ns := []string{controlPlane}
	for t := range numTeams {
		ns = append(ns, fmt.Sprintf("team-%02d", t))
	}
	for s := range numShared {
		ns = append(ns, fmt.Sprintf("shared-%d", s))
	}
	return ns
}

// uid is a stable UUID-shaped string derived from parts.
func uid(parts ...any) string {
	h := fnv.New128a()
	fmt.Fprint(h, parts...)
	b := h.Sum(nil)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// --- AppProjects ---

// projectManifest is AppProject i as an administrator applies it.
func projectManifest(i int, sourceNamespaces ...string) map[string]any {
	name, team := projectName(i), teamOf(i)
	if len(sourceNamespaces) == 0 {
		sourceNamespaces = []string{team, "shared-*"}
	}
	annotations := map[string]any{"team.example.com/owner": team + "-leads@example.com"}
	if i%quotaEvery == 0 {
		annotations["gatehouse.io/max-applications"] = "100"
	}
	return map[string]any{
		"apiVersion": apiVersion,
		"kind":       "AppProject",
		"metadata": map[string]any{
			"name":        name,
			"namespace":   controlPlane,
			"labels":      map[string]any{"team.example.com/name": team, "environment": "production"},
			"annotations": annotations,
		},
		"spec": map[string]any{
			"description":      fmt.Sprintf("Production services of %s (project %d)", team, i),
			"sourceRepos":      []any{"https://git.example.com/" + team + "/*", "https://charts.example.com/*"},
			"sourceNamespaces": toAny(sourceNamespaces),
			"destinations": []any{
				map[string]any{"server": "https://kubernetes.default.svc", "namespace": team + "-*"},
				map[string]any{"name": "prod-eu-west-1", "namespace": team + "-*"},
			},
			"clusterResourceWhitelist":   []any{map[string]any{"group": "", "kind": "Namespace"}},
			"namespaceResourceBlacklist": []any{map[string]any{"group": "", "kind": "ResourceQuota"}, map[string]any{"group": "", "kind": "LimitRange"}},
			"roles": []any{map[string]any{
				"name":        "deployer",
				"description": "CI deploys and syncs",
				"policies": []any{
					fmt.Sprintf("p, proj:%s:deployer, applications, sync, %s/*, allow", name, name),
					fmt.Sprintf("p, proj:%s:deployer, applications, get, %s/*, allow", name, name),
				},
				"groups": []any{team + "-devs"},
			}},
			"orphanedResources": map[string]any{"warn": false},
		},
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// --- Applications ---

// applicationManifest is Application j of project i as its team applies it.
func applicationManifest(i, j int, name string) map[string]any {
	ns, team, comp := appNamespace(i, j), teamOf(i), components[j]
	return map[string]any{
		"apiVersion": apiVersion,
		"kind":       "Application",
		"metadata": map[string]any{
			"name":      name,
			"namespace": ns,
			"labels": map[string]any{
				"app.kubernetes.io/part-of": team,
				"team.example.com/name":     team,
				"environment":               "production",
			},
			"annotations": map[string]any{
				"notifications.argoproj.io/subscribe.on-sync-failed.slack": team + "-alerts",
				"argocd.argoproj.io/manifest-generate-paths":               "/deploy/" + comp,
			},
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
		},
		"spec": map[string]any{
			"project": projectName(i),
			"source": map[string]any{
				"repoURL":        fmt.Sprintf("https://git.example.com/%s/%s.git", team, comp),
				"targetRevision": "main",
				"path":           "deploy/" + comp,
				"helm": map[string]any{
					"releaseName": comp,
					"valueFiles":  []any{"values.yaml", "values-production.yaml"},
					"parameters": []any{
						map[string]any{"name": "image.tag", "value": fmt.Sprintf("1.%d.%d", i%50, j)},
						map[string]any{"name": "replicaCount", "value": "3"},
					},
					"values": "resources:\n  requests:\n    cpu: 250m\n    memory: 256Mi\n  limits:\n    memory: 512Mi\n" +
						"podDisruptionBudget:\n  minAvailable: 2\nserviceMonitor:\n  enabled: true\n",
				},
			},
			"destination": map[string]any{
				"server":    "https://kubernetes.default.svc",
				"namespace": team + "-" + comp,
			},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"},
				"retry": map[string]any{
					"limit":   int64(5),
					"backoff": map[string]any{"duration": "5s", "factor": int64(2), "maxDuration": "3m"},
				},
			},
			"revisionHistoryLimit": int64(10),
			"info":                 []any{map[string]any{"name": "owner", "value": team + "@example.com"}},
		},
	}
}

// applicationStatus is what Argo CD's application controller writes after
// sync number gen of Application j of project i.
func applicationStatus(i, j, gen int) map[string]any {
	team, comp := teamOf(i), components[j]
	dest := team + "-" + comp
	rev := fmt.Sprintf("%040x", uint64(i*appsPerProject+j)*7919+uint64(gen))
	at := epoch.Add(time.Duration(gen) * time.Minute)
	source := map[string]any{
		"repoURL": fmt.Sprintf("https://git.example.com/%s/%s.git", team, comp), "targetRevision": "main",
		"path": "deploy/" + comp, "helm": map[string]any{"releaseName": comp, "valueFiles": []any{"values.yaml", "values-production.yaml"}},
	}
	kinds := [][3]string{
		{"", "v1", "Service"}, {"apps", "v1", "Deployment"}, {"", "v1", "ConfigMap"},
		{"", "v1", "ServiceAccount"}, {"autoscaling", "v2", "HorizontalPodAutoscaler"}, {"monitoring.coreos.com", "v1", "ServiceMonitor"},
	}
	resources := make([]any, 0, len(kinds))
	results := make([]any, 0, len(kinds))
	for _, k := range kinds {
		r := map[string]any{"version": k[1], "kind": k[2], "namespace": dest, "name": comp, "status": "Synced"}
		if k[0] != "" {
			r["group"] = k[0]
		}
		if k[2] != "ConfigMap" && k[2] != "ServiceAccount" {
			r["health"] = map[string]any{"status": "Healthy"}
		}
		resources = append(resources, r)
		results = append(results, map[string]any{
			"group": k[0], "version": k[1], "kind": k[2], "namespace": dest, "name": comp,
			"status": "Synced", "message": fmt.Sprintf("%s/%s configured", k[2], comp), "syncPhase": "Sync",
		})
	}
	return map[string]any{
		"sync": map[string]any{
			"status": "Synced", "revision": rev,
			"comparedTo": map[string]any{"source": source, "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": dest}},
		},
		"health":    map[string]any{"status": "Healthy", "lastTransitionTime": ts(at)},
		"resources": resources,
		"history": []any{map[string]any{
			"id": int64(gen), "revision": rev, "deployStartedAt": ts(at), "deployedAt": ts(at.Add(9 * time.Second)),
			"source": source, "initiatedBy": map[string]any{"automated": true},
		}},
		"reconciledAt": ts(at.Add(3 * time.Minute)),
		"operationState": map[string]any{
			"operation": map[string]any{
				"sync":        map[string]any{"revision": rev, "prune": true, "syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"}},
				"initiatedBy": map[string]any{"automated": true},
				"retry":       map[string]any{"limit": int64(5)},
			},
			"phase": "Succeeded", "message": "successfully synced (all tasks run)",
			"syncResult": map[string]any{"resources": results, "revision": rev, "source": source},
			"startedAt":  ts(at), "finishedAt": ts(at.Add(9 * time.Second)),
		},
		"sourceType":          "Helm",
		"summary":             map[string]any{"images": []any{fmt.Sprintf("registry.example.com/%s/%s:1.%d.%d", team, comp, i%50, j)}},
		"controllerNamespace": controlPlane,
	}
}

// --- what kubectl apply and the API server add ---

// withLastApplied returns m with kubectl's last-applied-configuration
// annotation: m itself, compact, as client-side apply writes it.
func withLastApplied(m map[string]any) map[string]any {
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	out := deepCopy(m)
	meta := out["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[corev1.LastAppliedConfigAnnotation] = string(raw) + "\n"
	return out
}

func deepCopy(m map[string]any) map[string]any {
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// fieldSet is the FieldsV1 of every field in m, the way the API server
// records what a manager set. Lists count as atomic, as in a CRD with
// x-kubernetes-preserve-unknown-fields.
func fieldSet(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		sub, ok := v.(map[string]any)
		if !ok || len(sub) == 0 {
			out["f:"+k] = map[string]any{}
			continue
		}
		fs := fieldSet(sub)
		fs["."] = map[string]any{}
		out["f:"+k] = fs
	}
	return out
}

func managedEntry(manager string, at time.Time, fields map[string]any) map[string]any {
	return map[string]any{
		"manager": manager, "operation": "Update", "apiVersion": apiVersion, "time": ts(at),
		"fieldsType": "FieldsV1", "fieldsV1": fields,
	}
}

// applyFields is what kubectl-client-side-apply owns of manifest m.
func applyFields(m map[string]any) map[string]any {
	meta := m["metadata"].(map[string]any)
	fmeta := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if sub, ok := meta[k].(map[string]any); ok {
			fs := fieldSet(sub)
			fs["."] = map[string]any{}
			fmeta["f:"+k] = fs
		}
	}
	if fin, ok := meta["finalizers"].([]any); ok {
		fs := map[string]any{".": map[string]any{}}
		for _, f := range fin {
			fs[fmt.Sprintf("v:%q", f)] = map[string]any{}
		}
		fmeta["f:finalizers"] = fs
	}
	fspec := fieldSet(m["spec"].(map[string]any))
	fspec["."] = map[string]any{}
	return map[string]any{"f:metadata": fmeta, "f:spec": fspec}
}

// stored turns an applied manifest into the object the API server hands to
// admission: uid, generation, timestamps and managedFields filled in.
func stored(applied map[string]any, gen int, resourceVersion string, status map[string]any) map[string]any {
	obj := deepCopy(applied)
	meta := obj["metadata"].(map[string]any)
	meta["uid"] = uid(meta["namespace"], meta["name"])
	meta["generation"] = int64(gen)
	meta["creationTimestamp"] = ts(epoch)
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	managed := []any{managedEntry("kubectl-client-side-apply", epoch, applyFields(applied))}
	if status != nil {
		obj["status"] = status
		fs := fieldSet(status)
		fs["."] = map[string]any{}
		managed = append(managed, managedEntry("argocd-application-controller", epoch.Add(time.Duration(gen)*time.Minute),
			map[string]any{"f:status": fs}))
	}
	meta["managedFields"] = managed
	return obj
}

// --- AdmissionReviews ---

var (
	tenant = authenticationv1.UserInfo{
		Username: "alice@example.com",
		UID:      "8d2f6a4e-1b7c-4f3e-9a51-3c2d7e8f9a10",
		Groups:   []string{"team-07-devs", "engineering", "system:authenticated"},
		Extra:    map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"JTI=5f0c2e7a-7d34-4b8e-a1c9-0e6f2b3d4c5a"}},
	}
	appController = authenticationv1.UserInfo{
		Username: "system:serviceaccount:argocd:argocd-application-controller",
		UID:      "2b9e8c71-4d3a-4e6f-8b1c-7a9d0e2f3c4b",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{
			"authentication.kubernetes.io/credential-id": {"JTI=a6b7c8d9-e0f1-4a2b-8c3d-4e5f6a7b8c9d"},
			"authentication.kubernetes.io/node-name":     {"ip-10-0-12-34.eu-west-1.compute.internal"},
			"authentication.kubernetes.io/node-uid":      {"c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"},
			"authentication.kubernetes.io/pod-name":      {"argocd-application-controller-0"},
			"authentication.kubernetes.io/pod-uid":       {"f0e1d2c3-b4a5-4968-8776-655443322110"},
		},
	}
	admin = authenticationv1.UserInfo{
		Username: "platform-admin@example.com",
		Groups:   []string{"platform-admins", "system:authenticated"},
	}
)

func review(kind, resource string, op admissionv1.Operation, user authenticationv1.UserInfo, obj, old map[string]any, seq int) []byte {
	meta := obj["metadata"].(map[string]any)
	gvk := metav1.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: kind}
	gvr := metav1.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: resource}
	options := `{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply","fieldValidation":"Strict"}`
	if op == admissionv1.Update {
		options = `{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}`
	}
	dryRun := false
	req := &admissionv1.AdmissionRequest{
		UID:             types.UID(uid("review", kind, op, seq)),
		Kind:            gvk,
		Resource:        gvr,
		RequestKind:     &gvk,
		RequestResource: &gvr,
		Name:            meta["name"].(string),
		Namespace:       meta["namespace"].(string),
		Operation:       op,
		UserInfo:        user,
		Object:          runtime.RawExtension{Raw: mustJSON(obj)},
		DryRun:          &dryRun,
		Options:         runtime.RawExtension{Raw: []byte(options)},
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(old)}
	}
	return mustJSON(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// A reviewKind is one kind of AdmissionReview the benchmarks send, with the
// webhook path that answers it.
type reviewKind struct {
	name string
	path string
	// body builds the seq-th distinct review of this kind.
	body func(seq int) []byte
}

// pick spreads seq over projects so lookups hit many cache entries.
func pick(seq int) int { return (seq * 37) % numProjects }

var reviewKinds = []reviewKind{
	{
		// kubectl apply of a new Application into a permitted namespace of a
		// project; every fourth project has a quota, so the project's
		// Applications are listed too.
		name: "application-create",
		path: "/validate/applications",
		body: func(seq int) []byte {
			i, j := pick(seq), seq%8
			applied := withLastApplied(applicationManifest(i, j, fmt.Sprintf("%s-canary-%d", appName(i, j), seq)))
			return review("Application", "applications", admissionv1.Create, tenant, stored(applied, 1, "", nil), nil, seq)
		},
	},
	{
		// Argo CD's application controller writing status after a sync: the
		// CRD has no status subresource, so it is an UPDATE of the whole
		// object, the most frequent admission request for Applications.
		name: "application-update",
		path: "/validate/applications",
		body: func(seq int) []byte {
			i, j := pick(seq), seq%appsPerProject
			applied := withLastApplied(applicationManifest(i, j, appName(i, j)))
			gen := 40 + seq%7
			old := stored(applied, gen, fmt.Sprint(100000+seq*2), applicationStatus(i, j, gen))
			obj := stored(applied, gen+1, fmt.Sprint(100000+seq*2), applicationStatus(i, j, gen+1))
			return review("Application", "applications", admissionv1.Update, appController, obj, old, seq)
		},
	},
	{
		// An administrator adding a namespace to a project: the webhook lists
		// the project's 10 Applications to check none is stranded.
		name: "appproject-update",
		path: "/validate/appprojects",
		body: func(seq int) []byte {
			i := pick(seq)
			oldApplied := withLastApplied(projectManifest(i))
			newApplied := withLastApplied(projectManifest(i, teamOf(i), "shared-*", fmt.Sprintf("team-%02d", (i+1)%numTeams)))
			old := stored(oldApplied, 1, fmt.Sprint(200000+seq), nil)
			obj := stored(newApplied, 2, fmt.Sprint(200000+seq), nil)
			return review("AppProject", "appprojects", admissionv1.Update, admin, obj, old, seq)
		},
	},
}

// bodies returns n distinct reviews of kind k.
func (k reviewKind) bodies(n int) [][]byte {
	out := make([][]byte, n)
	for s := range out {
		out[s] = k.body(s)
	}
	return out
}

func meanLen(bodies [][]byte) int {
	total := 0
	for _, b := range bodies {
		total += len(b)
	}
	return total / max(len(bodies), 1)
}
