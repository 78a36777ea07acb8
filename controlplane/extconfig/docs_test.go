package extconfig

import (
	"os"
	"strings"
	"testing"
)

// TestConfigurationReferenceNamesEveryField: docs/configuration.md names
// every field the extension config decoders read, so a field added to the
// code cannot go undocumented.
func TestConfigurationReferenceNamesEveryField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(knownFields) < 20 {
		t.Fatalf("knownFields has %d names; the decoders moved?", len(knownFields))
	}
	_, section, _ := strings.Cut(string(doc), "\n## Extensions\n")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, f := range knownFields {
		if !strings.Contains(section, "| `"+f+"` |") {
			t.Errorf("field %q is read by the extension config decoders and has no row in docs/configuration.md's Extensions section", f)
		}
	}
}
