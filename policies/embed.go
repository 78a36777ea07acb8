package policies

import (
	"embed"
	"fmt"
)

//go:embed extensions/policy.rego extensions/data.example.json
var embedded embed.FS

// DefaultPolicy is the source of the default policy, extensions/policy.rego.
func DefaultPolicy() []byte {
	src, err := embedded.ReadFile("extensions/policy.rego")
	if err != nil {
		panic(err) // embedded at build time
	}
	return src
}

// DefaultBundle is the default policy with the given data document (the whole
// data, holding "gatehouse"; nil for none, which denies every request).
func DefaultBundle(data map[string]any) Bundle {
	if data == nil {
		data = map[string]any{}
	}
	return Bundle{
		Modules:  []Module{{Path: "extensions/policy.rego", Source: DefaultPolicy()}},
		Data:     data,
		Manifest: Manifest{Revision: "builtin"},
	}
}

// ExampleBundle is the default policy with extensions/data.example.json, for
// `gatehouse dev` and demos.
func ExampleBundle() Bundle {
	raw, err := embedded.ReadFile("extensions/data.example.json")
	if err != nil {
		panic(err)
	}
	data, err := decodeJSONObject(raw)
	if err != nil {
		panic(fmt.Sprintf("extensions/data.example.json: %v", err))
	}
	b := DefaultBundle(data)
	b.Manifest.Revision = "builtin-example"
	return b
}
