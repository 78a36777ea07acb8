package helm

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestReadmeDocumentsEveryValue: the values table of charts/gatehouse's
// README names every value of values.yaml and no other. A value is a key
// whose schema is free-form (resources, nodeSelector, a list) or a scalar;
// a group the schema closes (additionalProperties false) is documented by
// its keys.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	raw, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var keys []string
	collectValues("", values, schema, &keys)

	readme, err := os.ReadFile(chartDir + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-zA-Z0-9.]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		documented = append(documented, m[1])
	}
	if len(documented) == 0 {
		t.Fatal("the README has no values table (rows \"| `key` | default | meaning |\")")
	}
	for _, k := range keys {
		if !slices.Contains(documented, k) {
			t.Errorf("values.yaml has %s; the README's values table does not document it", k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(keys, k) {
			t.Errorf("the README's values table documents %s; values.yaml has no such value", k)
		}
	}
}

// collectValues appends the dotted keys of values, descending into the maps
// whose schema closes them.
func collectValues(prefix string, values, schema map[string]any, out *[]string) {
	props, _ := schema["properties"].(map[string]any)
	for k, v := range values {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		sub, _ := props[k].(map[string]any)
		m, isMap := v.(map[string]any)
		if open, isBool := sub["additionalProperties"].(bool); isMap && isBool && !open {
			collectValues(path, m, sub, out)
			continue
		}
		*out = append(*out, path)
	}
}
