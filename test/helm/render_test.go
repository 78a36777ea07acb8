package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

const (
	chartDir     = "../../charts/gatehouse"
	manifestsDir = "../../manifests"
	// release and namespace of the documented install:
	// helm install gatehouse charts/gatehouse -n gatehouse-system.
	releaseName      = "gatehouse"
	releaseNamespace = "gatehouse-system"
	// kubeVersion is the oldest Kubernetes the chart accepts (Chart.yaml's
	// kubeVersion): the chart renders there as it does everywhere else.
	kubeVersion = "v1.30.0"
)

// lastNotes is NOTES.txt as the last render printed it.
var lastNotes string

// objects are rendered manifests by "apiVersion kind namespace/name", each
// decoded from YAML into JSON's types, so two renders compare by value
// whatever their key order, quoting or comments.
type objects map[string]map[string]any

// toolsDir is the directory of the real kubectl and helm (test/tools/install.sh
// prints it; make test passes it as KUBEBUILDER_ASSETS).
func toolsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: set it to the tools directory test/tools/install.sh prints " +
			"(KUBEBUILDER_ASSETS=$(test/tools/install.sh) go test ./...), which holds kubectl and helm")
	}
	return dir
}

// run runs a tool of the tools directory and returns its standard output.
func run(t *testing.T, tool string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(toolsDir(t), tool), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s%s", tool, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// kustomize renders a kustomization of the repository with the real kubectl.
func kustomize(t *testing.T, dir string) objects {
	t.Helper()
	out, err := run(t, "kubectl", "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, "kubectl kustomize "+dir, out)
}

// loadChart loads charts/gatehouse as Helm does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	return c
}

// renderChart renders the chart as `helm install gatehouse charts/gatehouse
// -n gatehouse-system --dry-run` does, with values set over the defaults
// (each key a dotted path, as with --set), values.schema.json checked.
func renderChart(t *testing.T, set map[string]any) (objects, error) {
	t.Helper()
	return renderChartIn(t, releaseNamespace, set)
}

// renderChartIn renders the chart as installed into namespace.
func renderChartIn(t *testing.T, namespace string, set map[string]any) (objects, error) {
	t.Helper()
	vals := map[string]any{}
	for path, v := range set {
		m := vals
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.KubeVersion = kv
	install.IncludeCRDs = true
	rel, err := install.Run(loadChart(t), vals)
	if err != nil {
		return nil, err
	}
	lastNotes = rel.Info.Notes
	var manifest bytes.Buffer
	manifest.WriteString(rel.Manifest)
	for _, hook := range rel.Hooks {
		manifest.WriteString("\n---\n" + hook.Manifest)
	}
	return parse(t, "the chart", manifest.Bytes()), nil
}

// mustRender renders the chart and fails the test if it cannot.
func mustRender(t *testing.T, set map[string]any) objects {
	t.Helper()
	objs, err := renderChart(t, set)
	if err != nil {
		t.Fatalf("render the chart with %v: %v", set, err)
	}
	return objs
}

// parse splits a stream of YAML documents into objects.
func parse(t *testing.T, source string, stream []byte) objects {
	t.Helper()
	out := objects{}
	for _, doc := range splitDocuments(stream) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v\n%s", source, err, doc)
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if obj == nil {
			continue // comments only
		}
		k := key(obj)
		if _, dup := out[k]; dup {
			t.Fatalf("%s renders %s twice", source, k)
		}
		out[k] = obj
	}
	return out
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(stream []byte) []string {
	var docs []string
	var cur strings.Builder
	for line := range strings.SplitAfterSeq(string(stream), "\n") {
		if strings.TrimRight(line, " \r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

// key names an object: apiVersion, kind, namespace/name.
func key(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name := fmt.Sprint(meta["name"])
	if ns, ok := meta["namespace"].(string); ok {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%v %v %s", obj["apiVersion"], obj["kind"], name)
}

// merge is the objects of both renders (applied together).
func merge(t *testing.T, a, b objects) objects {
	t.Helper()
	out := objects{}
	for _, objs := range []objects{a, b} {
		for k, v := range objs {
			if _, dup := out[k]; dup {
				t.Fatalf("%s is rendered by both", k)
			}
			out[k] = v
		}
	}
	return out
}

// without returns objs without the objects named.
func without(t *testing.T, objs objects, keys ...string) objects {
	t.Helper()
	out := objects{}
	for k, v := range objs {
		out[k] = v
	}
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			t.Fatalf("no %s to leave out; rendered: %v", k, sortedKeys(objs))
		}
		delete(out, k)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sameObjects fails the test for every object only one side renders and
// every field that differs between the two renders of an object.
func sameObjects(t *testing.T, wantName string, want objects, gotName string, got objects) {
	t.Helper()
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s renders %s, %s does not", wantName, k, gotName)
			continue
		}
		if diffs := diff("", want[k], g); len(diffs) > 0 {
			t.Errorf("%s differs (- %s, + %s):\n%s", k, wantName, gotName, strings.Join(diffs, "\n"))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s renders %s, %s does not", gotName, k, wantName)
		}
	}
}

// diff lists the paths where a and b differ, each with both values.
func diff(path string, a, b any) []string {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		var out []string
		keys := sortedKeys(am)
		for _, k := range sortedKeys(bm) {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			av, aok := am[k]
			bv, bok := bm[k]
			switch {
			case !aok:
				out = append(out, fmt.Sprintf("  %s.%s:\n    + %s", path, k, show(bv)))
			case !bok:
				out = append(out, fmt.Sprintf("  %s.%s:\n    - %s", path, k, show(av)))
			default:
				out = append(out, diff(path+"."+k, av, bv)...)
			}
		}
		return out
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("  %s:\n    - %s\n    + %s", path, show(a), show(b))}
}

// show is a value as compact JSON, cut to a readable length.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const limit = 400
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

// fullJSON is an object as JSON, whole.
func fullJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// field returns the value at a dotted path of an object ("spec.replicas";
// a number indexes a list), or an error naming where the path ends.
func field(obj map[string]any, path string) (any, error) {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, fmt.Errorf("no %s", part)
			}
			cur = v
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no element %s of a list of %d", part, len(c))
			}
			cur = c[i]
		default:
			return nil, errors.New("not a map or list at " + part)
		}
	}
	return cur, nil
}

// container returns the container (or init container) name of a
// Deployment.
func container(t *testing.T, deploy map[string]any, list, name string) map[string]any {
	t.Helper()
	cs, err := field(deploy, "spec.template.spec."+list)
	if err != nil {
		t.Fatalf("%s: %v", key(deploy), err)
	}
	for _, c := range cs.([]any) {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("%s has no %s %s", key(deploy), list, name)
	return nil
}

// args returns a container's arguments.
func args(c map[string]any) []string {
	raw, _ := c["args"].([]any)
	out := make([]string, 0, len(raw))
	for _, a := range raw {
		out = append(out, fmt.Sprint(a))
	}
	return out
}
