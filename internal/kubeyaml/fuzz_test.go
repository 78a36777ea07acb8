package kubeyaml_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

// FuzzDecode feeds the decoder untrusted bytes: it must never panic, every
// object it yields must be a Kubernetes object in valid JSON with the origin
// it came from, and what it yields must read back the same.
func FuzzDecode(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.data)
	}
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := kubeyaml.Decode("in.yaml", data)
		if err != nil {
			if _, ok := err.(*kubeyaml.Error); !ok { //nolint:errorlint // the type itself is the contract
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		var again bytes.Buffer
		lastDoc := 0
		roundTrip := true
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" {
				t.Fatalf("object without apiVersion or kind: %s", o.JSON)
			}
			var m map[string]any
			if err := json.Unmarshal(o.JSON, &m); err != nil {
				t.Fatalf("object JSON does not decode: %v", err)
			}
			if o.Origin.Path != "in.yaml" || o.Origin.Document < lastDoc || o.Origin.Document < 1 {
				t.Fatalf("origin %+v after document %d", o.Origin, lastDoc)
			}
			lastDoc = o.Origin.Document
			// A list item may carry "items: null", which reads back as
			// an empty list (kubectl too); such input does not round-trip.
			if _, has := m["items"]; has {
				roundTrip = false
			}
			again.Write(o.JSON)
			again.WriteByte('\n')
		}
		if !roundTrip || len(objs) == 0 {
			return
		}
		back, err := kubeyaml.Decode("again.json", again.Bytes())
		if err != nil {
			t.Fatalf("yielded objects do not read back: %v", err)
		}
		if len(back) != len(objs) {
			t.Fatalf("%d objects read back as %d", len(objs), len(back))
		}
		for i := range back {
			if !bytes.Equal(back[i].JSON, objs[i].JSON) {
				t.Fatalf("object %d reads back as\n%s\nnot\n%s", i, back[i].JSON, objs[i].JSON)
			}
		}
	})
}
