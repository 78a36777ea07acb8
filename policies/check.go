package policies

import "context"

// checkSource is Check without compiling the grant rules the engine
// generates from the data: it validates the data against the model (and
// decodes its bindings and roles as the generator does) and compiles the
// bundle's own Rego, which matches grants from the data when the generated
// rules are absent, as under `opa test`. Every mistake an admin can make
// shows the same; what it skips is compiling Gatehouse's own generated
// code, whose cost grows with the number of grants (1 MiB of grants takes
// seconds, where the rest takes about a hundred milliseconds), and which
// the proxy's engine builds and compiles when it loads the bundle, keeping
// its last good policy should that fail. The control plane gates bundles
// with it. A bundle with Rego of its own must decide the smoke inputs within
// the evaluation bound, as under Check.
func checkSource(ctx context.Context, b Bundle, opts ...Option) (warnings []string, err error) {
	return check(ctx, b, false, opts)
}
