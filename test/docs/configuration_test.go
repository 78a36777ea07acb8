package docs_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// TestConfigurationReferenceNamesEveryPolicyBundleField: every field of
// the PolicyBundle's spec and status has a row in docs/configuration.md.
func TestConfigurationReferenceNamesEveryPolicyBundleField(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	_, section, _ := strings.Cut(doc, "\n## PolicyBundle\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if section == "" {
		t.Fatal("docs/configuration.md has no PolicyBundle section")
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || ty.PkgPath() != reflect.TypeFor[gatehousev1.PolicyBundleSpec]().PkgPath() || seen[ty] {
			return
		}
		seen[ty] = true
		for f := range ty.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(section, "| `"+name+"` |") {
				t.Errorf("PolicyBundle field %s.%s (%q) has no row in docs/configuration.md's PolicyBundle section", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[gatehousev1.PolicyBundleSpec]())
	walk(reflect.TypeFor[gatehousev1.PolicyBundleStatus]())
	if len(seen) < 4 {
		t.Fatalf("walked %d types; the API moved?", len(seen))
	}
}
