package policies

import (
	"embed"
	"fmt"
)

//go:embed extensions/policy.rego extensions/policy_test.rego extensions/data.example.json extensions/input.example.json
var embedded embed.FS

// Where the default policy's files sit, in the embedded tree and in a
// bundle that uses them.
const (
	defaultPolicyPath = "extensions/policy.rego"
	defaultTestsPath  = "extensions/policy_test.rego"
	exampleDataPath   = "extensions/data.example.json"
	exampleInputPath  = "extensions/input.example.json"
)

// DefaultPolicy is the source of the default policy, extensions/policy.rego.
func DefaultPolicy() []byte { return embeddedFile(defaultPolicyPath) }

// DefaultPolicyTests is the source of the default policy's Rego tests,
// extensions/policy_test.rego.
func DefaultPolicyTests() []byte { return embeddedFile(defaultTestsPath) }

// ExampleData is extensions/data.example.json: grants of every form for the
// default policy.
func ExampleData() []byte { return embeddedFile(exampleDataPath) }

// ExampleInput is extensions/input.example.json: a request that the example
// data allows.
func ExampleInput() []byte { return embeddedFile(exampleInputPath) }

func embeddedFile(name string) []byte {
	src, err := embedded.ReadFile(name)
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
		Modules:  []Module{{Path: defaultPolicyPath, Source: DefaultPolicy()}},
		Data:     data,
		Manifest: Manifest{Revision: "builtin"},
	}
}

// ExampleBundle is the default policy with extensions/data.example.json, for
// `gatehouse dev` and demos.
func ExampleBundle() Bundle {
	data, err := decodeJSONObject(ExampleData())
	if err != nil {
		panic(fmt.Sprintf("extensions/data.example.json: %v", err))
	}
	b := DefaultBundle(data)
	b.Manifest.Revision = "builtin-example"
	return b
}
