package policies

import (
	"context"
	"strings"
	"testing"
)

// checkSource refuses what Check refuses, for every way a bundle can be
// wrong that an admin controls.
func TestCheckSourceRefusesWhatCheckRefuses(t *testing.T) {
	for name, b := range map[string]Bundle{
		"Rego that does not parse":       {Modules: []Module{{Path: "p.rego", Source: []byte("package gatehouse.extensions\n\ndecision := {")}}},
		"Rego that does not compile":     {Modules: []Module{{Path: "p.rego", Source: []byte("package gatehouse.extensions\n\ndecision := x if { y }\n")}}},
		"no entrypoint":                  {Modules: []Module{{Path: "p.rego", Source: []byte("package other\n\nx := 1\n")}}},
		"the reserved package":           {Modules: []Module{{Path: "g.rego", Source: []byte("package " + generatedPackage + "\n\nx := 1\n")}}},
		"data that does not fit":         DefaultBundle(map[string]any{"gatehouse": map[string]any{"roles": map[string]any{"r": map[string]any{"extensions": []any{map[string]any{"projcet": "x"}}}}}}),
		"a binding to a role not a list": DefaultBundle(map[string]any{"gatehouse": map[string]any{"bindings": map[string]any{"users": map[string]any{"alice": "role:x"}}}}),
	} {
		_, checkErr := Check(context.Background(), b)
		_, sourceErr := checkSource(context.Background(), b)
		if checkErr == nil || sourceErr == nil {
			t.Errorf("%s: Check %v, CheckSource %v: want both to refuse", name, checkErr, sourceErr)
			continue
		}
		if !strings.Contains(sourceErr.Error(), firstLine(checkErr.Error())) {
			t.Errorf("%s: CheckSource says %q, Check %q", name, sourceErr, checkErr)
		}
	}
	if _, err := checkSource(context.Background(), ExampleBundle()); err != nil {
		t.Errorf("the example bundle: %v", err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
