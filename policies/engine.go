package policies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/cache"
)

// errNoPolicy is returned by Decide before a policy has been loaded.
var errNoPolicy = errors.New("no extension policy loaded")

// Decision is the answer for one request.
type Decision struct {
	// Allow is the effective answer: the policy's, or true in shadow mode.
	Allow bool
	// Reason explains the decision; it is safe to show the user.
	Reason string
	// Headers are added to the backend request when allowed. Shared between
	// cached decisions: do not modify.
	Headers map[string]string
	// Shadow is set when the policy denied but is not enforcing, so Allow is
	// true anyway.
	Shadow bool
	// Conceal is set when the policy asks (decision.conceal) that a denial
	// not say why: the reason would tell the caller that the Application
	// exists, or where. The proxy then gives the same answer as for an
	// Application it does not know; Reason is still logged and shown to
	// admins by policy eval.
	Conceal bool
	// Revision is the policy revision that decided.
	Revision string
	// Cached is set when the decision came from the decision cache.
	Cached bool
}

// Engine evaluates extension requests against the current policy. It is safe
// for concurrent use; Load swaps the policy atomically.
type Engine struct {
	opts   options
	iqvc   cache.InterQueryValueCache
	state  atomic.Pointer[compiled]
	loadMu sync.Mutex

	hits, misses, evals, errs, timeouts atomic.Uint64
}

// compiled is one loaded policy version, with its own decision cache.
type compiled struct {
	query rego.PreparedEvalQuery // for traces and explanations
	// body is the compiled query "gatehouse_decision = <entrypoint>" that
	// decisions evaluate (evalQuery).
	body          ast.Body
	queryCompiler ast.QueryCompiler
	iqvc          cache.InterQueryValueCache
	compiler      *ast.Compiler
	store         storage.Store
	digest        string
	revision      string
	enforcing     bool
	withPath      bool
	cache         *decisionCache
	checker       *checker
	values        *inputValues
	evalCaches    *evalCaches
	// controlPlane is data.gatehouse.config.controlPlaneNamespace, for
	// Checks.
	controlPlane string
}

type options struct {
	log         *slog.Logger
	cacheTTL    time.Duration
	cacheSize   int
	globCache   int
	evalTimeout time.Duration
	now         func() time.Time
}

// Option configures an Engine.
type Option func(*options)

// WithDecisionLog logs one line per decision (and engine events) to l; nil
// disables logging.
func WithDecisionLog(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithCache sets the decision cache's bound and TTL (defaults 10,000 entries,
// 5s); a zero size or TTL disables the cache.
func WithCache(size int, ttl time.Duration) Option {
	return func(o *options) { o.cacheSize, o.cacheTTL = size, ttl }
}

// WithEvalTimeout bounds each evaluation of the policy (default
// DefaultEvalTimeout, 100ms; 0 or less: no bound). An evaluation that runs
// past it is stopped at its next expression once it has evaluated more than
// 10,000 (a decision that did less was waiting for a core, not running
// away), and at ten times the bound in any case. The request is then denied
// with a reason that says so, Decide returns an error wrapping an
// *evalTimeoutError, and Stats counts it in Timeouts (and Errors). The bound
// is wall-clock time, so it also keeps a decision's memory to what the
// policy can allocate in that time.
func WithEvalTimeout(d time.Duration) Option { return func(o *options) { o.evalTimeout = d } }

// withClock replaces time.Now, for tests.
func withClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// NewEngine returns an Engine with no policy; Decide fails with errNoPolicy
// until Load succeeds.
func NewEngine(opts ...Option) *Engine {
	o := options{cacheTTL: 5 * time.Second, cacheSize: 10000, globCache: 10000, evalTimeout: DefaultEvalTimeout, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	// OPA keeps only 100 compiled globs in its process-wide cache; a policy
	// with more patterns would recompile them on every evaluation. Compiled
	// globs are kept in an inter-query cache of this engine instead.
	n := o.globCache
	iqvc := cache.NewInterQueryValueCache(context.Background(), &cache.Config{
		InterQueryBuiltinValueCache: cache.InterQueryBuiltinValueCacheConfig{MaxNumEntries: &n},
	})
	return &Engine{opts: o, iqvc: iqvc}
}

// Load compiles b and, if it compiles, makes it the engine's policy and drops
// the decision cache. A bundle identical to the current one is not compiled
// again. On error the previous policy stays, and the error carries the
// compiler's message.
func (e *Engine) Load(ctx context.Context, b Bundle) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	digest := b.Digest()
	if cur := e.state.Load(); cur != nil && cur.digest == digest {
		return nil
	}
	start := time.Now()
	c, warnings, err := compileBundle(ctx, b, e.iqvc)
	if err != nil {
		e.logEvent(ctx, slog.LevelError, "extension policy refused", slog.String("revision", ShortRevision(b.Manifest.Revision)), slog.String("error", err.Error()))
		return err
	}
	c.digest = digest
	c.cache = newDecisionCache(e.opts.cacheSize, e.opts.cacheTTL)
	e.state.Store(c)
	for _, w := range warnings {
		e.logEvent(ctx, slog.LevelWarn, "extension policy data", slog.String("revision", ShortRevision(c.revision)), slog.String("warning", w))
	}
	e.logEvent(ctx, slog.LevelInfo, "extension policy loaded",
		slog.String("revision", ShortRevision(c.revision)), slog.Bool("enforcing", c.enforcing),
		slog.Int("modules", len(b.Modules)), slog.Duration("compile", time.Since(start)))
	return nil
}

// Check compiles b without loading it, for validating a bundle before it is
// shipped. It returns the data warnings. It also decides the example input
// (extensions/input.example.json) and the same request for a system
// extension under the evaluation bound (WithEvalTimeout; the other options
// are ignored): a policy that cannot decide those in time would deny every
// request like them, so it is refused with an *evalTimeoutError in its
// error.
func Check(ctx context.Context, b Bundle, opts ...Option) (warnings []string, err error) {
	return check(ctx, b, true, opts)
}

// check compiles b (with the generated grant rules or without) and, unless
// the Rego is only the default policy, which decides in bounded time by
// construction, decides the smoke inputs under the evaluation bound.
func check(ctx context.Context, b Bundle, generate bool, opts []Option) (warnings []string, err error) {
	o := options{evalTimeout: DefaultEvalTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	c, warnings, err := compileBundleWith(ctx, b, nil, generate)
	if err != nil {
		return warnings, err
	}
	if !generate && b.onlyDefaultPolicy() {
		// Without the generated rules the default policy matches grants
		// in Rego, whose cost grows with the data: timing it says nothing
		// of the proxy's engine, which generates them.
		return warnings, nil
	}
	if err := c.smokeTest(ctx, o.evalTimeout); err != nil {
		// Too slow is the Rego's doing, or the data's when the Rego is
		// the default policy.
		files := b.modulePaths()
		if b.onlyDefaultPolicy() {
			files = []string{DataFile}
		}
		return warnings, &fileError{files: files, err: err}
	}
	return warnings, nil
}

// Revision returns the loaded policy's revision ("" before any Load).
func (e *Engine) Revision() string {
	if c := e.state.Load(); c != nil {
		return c.revision
	}
	return ""
}

// Flush drops cached decisions, for when what the proxy resolves inputs from
// (applications, projects, clusters) changed in a way the cache key does not
// show.
func (e *Engine) Flush() {
	if c := e.state.Load(); c != nil && c.cache != nil {
		n := *c
		n.cache = newDecisionCache(e.opts.cacheSize, e.opts.cacheTTL)
		e.state.CompareAndSwap(c, &n)
	}
}

// stats are counters since the engine started. Errors counts evaluations
// that failed, Timeouts those of them stopped at the engine's bound.
type stats struct {
	CacheHits, CacheMisses, Evaluations, Errors, Timeouts uint64
	CacheEntries                                          int
}

// stats returns the engine's counters.
func (e *Engine) stats() stats {
	s := stats{CacheHits: e.hits.Load(), CacheMisses: e.misses.Load(), Evaluations: e.evals.Load(),
		Errors: e.errs.Load(), Timeouts: e.timeouts.Load()}
	if c := e.state.Load(); c != nil && c.cache != nil {
		s.CacheEntries = c.cache.len()
	}
	return s
}

// Decide answers one request. A decision from the cache is returned if there
// is a fresh one; otherwise the policy is evaluated. An evaluation error is
// returned as an error (deny the request) unless the policy is in shadow mode,
// which allows.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	c := e.state.Load()
	if c == nil {
		return Decision{}, errNoPolicy
	}
	start := time.Now()
	in.normalize()
	var buf [256]byte
	var key []byte
	if c.cache != nil {
		key = cacheKey(buf[:0], &in, c.withPath, c.cache.seed)
		if d, ok := c.cache.get(key, e.opts.now()); ok {
			e.hits.Add(1)
			d.Cached = true
			e.logDecision(ctx, &in, d, start, nil)
			return d, nil
		}
		e.misses.Add(1)
	}
	e.evals.Add(1)
	d, err := c.eval(ctx, &in, e.opts.evalTimeout)
	if err != nil {
		e.errs.Add(1)
		reason := "denied: the policy could not be evaluated"
		if te := (*evalTimeoutError)(nil); errors.As(err, &te) {
			e.timeouts.Add(1)
			reason = "denied: " + te.Error() + "; ask an administrator to make the policy faster"
		}
		if me := (*evalMemoryError)(nil); errors.As(err, &me) {
			reason = "denied: " + me.Error() + "; try again, and if it persists ask an administrator"
		}
		if !c.enforcing {
			d = Decision{Allow: true, Shadow: true, Reason: "the policy failed (not enforcing): " + err.Error(), Revision: c.revision}
			e.logDecision(ctx, &in, d, start, err)
			return d, nil
		}
		d = Decision{Revision: c.revision, Reason: reason}
		e.logDecision(ctx, &in, d, start, err)
		return d, err
	}
	if c.cache != nil {
		c.cache.put(key, d, e.opts.now())
	}
	e.logDecision(ctx, &in, d, start, nil)
	return d, nil
}

func (c *compiled) eval(ctx context.Context, in *Input, timeout time.Duration) (Decision, error) {
	v, err := c.evalQuery(ctx, c.input(in), timeout)
	if err != nil {
		return Decision{}, fmt.Errorf("evaluate policy %s: %w", c.name(), err)
	}
	d := Decision{Revision: c.revision}
	if v == nil {
		d.Reason = "denied: the policy made no decision"
	} else if err := decodeDecision(v, &d, c.values.keys); err != nil {
		return Decision{}, fmt.Errorf("policy %s: %w", c.name(), err)
	}
	if !d.Allow && !c.enforcing {
		d.Allow, d.Shadow, d.Headers, d.Conceal = true, true, nil, false
	}
	return d, nil
}

// evalQuery evaluates the entrypoint for input and returns its value (nil:
// undefined). It drives OPA's evaluator directly rather than through
// rego.PreparedEvalQuery, which per evaluation starts a goroutine to watch
// the context, collects metrics and converts the result to Go values: about
// a quarter of the cost of an uncached decision. Cancellation still follows
// ctx, and an evaluation running past timeout (if above 0) is stopped with
// an *evalTimeoutError.
func (c *compiled) evalQuery(ctx context.Context, input ast.Value, timeout time.Duration) (ast.Value, error) {
	txn, err := c.store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer c.store.Abort(ctx, txn)
	caches := c.evalCaches.get()
	guard := &caches.guard
	stopCtx := guard.arm(ctx, timeout)
	q := topdown.NewQuery(c.body).
		WithQueryCompiler(c.queryCompiler).
		WithCompiler(c.compiler).
		WithStore(c.store).
		WithTransaction(txn).
		WithInput(ast.NewTerm(input)).
		WithIndexing(true).
		WithEarlyExit(true).
		WithInterQueryBuiltinValueCache(c.iqvc).
		WithMetrics(noMetrics).
		WithVirtualCache(&caches.rules).
		WithBaseCache(&caches.data).
		WithCancel(guard)
	var out ast.Value
	err = q.Iter(ctx, func(qr topdown.QueryResult) error {
		if t := qr[resultVar]; t != nil {
			out = t.Value
		}
		return nil
	})
	reusable := guard.disarm(stopCtx)
	timedOut, outOfMemory := guard.timedOut, guard.outOfMemory
	if reusable {
		c.evalCaches.put(caches)
	}
	switch {
	case err != nil && outOfMemory:
		return nil, &evalMemoryError{}
	case err != nil && timedOut:
		return nil, &evalTimeoutError{Limit: timeout}
	}
	return out, err
}

// resultVar is bound to the entrypoint's value in the compiled query.
const resultVar = ast.Var("gatehouse_decision")

var noMetrics = metrics.NoOp()

// input works out in's checks and returns the Rego input.
func (c *compiled) input(in *Input) ast.Value {
	return c.values.input(in, c.checker.check(in, c.controlPlane))
}

// decodeDecision reads the policy's output contract.
func decodeDecision(v ast.Value, d *Decision, k *inputKeys) error {
	m, ok := v.(ast.Object)
	if !ok {
		return fmt.Errorf("decision is %s, want an object {allow, reason, headers}", astType(v))
	}
	var allowV ast.Value
	if t := m.Get(k.allow); t != nil {
		allowV = t.Value
	}
	allow, ok := allowV.(ast.Boolean)
	if !ok {
		return fmt.Errorf("decision.allow is %s, want a boolean", astType(allowV))
	}
	d.Allow = bool(allow)
	if r := m.Get(k.reason); r != nil {
		s, ok := r.Value.(ast.String)
		if !ok {
			return fmt.Errorf("decision.reason is %s, want a string", astType(r.Value))
		}
		d.Reason = string(s)
	}
	if h := m.Get(k.headers); h != nil && h.Value.Compare(ast.Null{}) != 0 {
		hm, ok := h.Value.(ast.Object)
		if !ok {
			return fmt.Errorf("decision.headers is %s, want an object of strings", astType(h.Value))
		}
		if d.Allow && hm.Len() > 0 {
			d.Headers = make(map[string]string, hm.Len())
			err := hm.Iter(func(k, v *ast.Term) error {
				name, ok := k.Value.(ast.String)
				if !ok {
					return fmt.Errorf("decision.headers has key %s, want strings", k)
				}
				var value any = astType(v.Value)
				if s, ok := v.Value.(ast.String); ok {
					value = string(s)
				}
				if msg := checkHeader(string(name), value); msg != "" {
					return fmt.Errorf("decision.headers[%q]: %s", string(name), msg)
				}
				d.Headers[string(name)] = value.(string)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	if c := m.Get(k.conceal); c != nil {
		b, ok := c.Value.(ast.Boolean)
		if !ok {
			return fmt.Errorf("decision.conceal is %s, want a boolean", astType(c.Value))
		}
		d.Conceal = bool(b) && !d.Allow
	}
	if d.Reason == "" {
		if d.Allow {
			d.Reason = "allowed"
		} else {
			d.Reason = "denied"
		}
	}
	return nil
}

// astType names the JSON type of v for messages.
func astType(v ast.Value) string {
	switch v.(type) {
	case nil:
		return "undefined"
	case ast.Null:
		return "null"
	case ast.String:
		return "a string"
	case ast.Boolean:
		return "a boolean"
	case ast.Number:
		return "a number"
	case *ast.Array:
		return "a list"
	case ast.Set:
		return "a set"
	case ast.Object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// compileBundle parses and compiles b, validates its data, generates the
// grant rules if the policy reads them, and prepares the query. iqvc may be
// nil (for Check).
func compileBundle(ctx context.Context, b Bundle, iqvc cache.InterQueryValueCache) (*compiled, []string, error) {
	return compileBundleWith(ctx, b, iqvc, true)
}

// compileBundleWith is compileBundle; generate false leaves the generated
// package out, so the policy matches grants from data as opa test does, for
// tests that compare the two.
func compileBundleWith(ctx context.Context, b Bundle, iqvc cache.InterQueryValueCache, generate bool) (*compiled, []string, error) {
	src, warnings, err := checkBundle(b)
	if err != nil {
		return nil, warnings, err
	}
	compiler, ref, err := compileModules(b, src, generate)
	if err != nil {
		return nil, warnings, err
	}
	c, err := prepareCompiled(ctx, b, src, compiler, ref, iqvc)
	if err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// bundleSource is what checkBundle reads from a bundle's manifest and data
// before its Rego is compiled.
type bundleSource struct {
	name        string // the revision for errors
	query       string // the entrypoint
	regoVersion ast.RegoVersion
	data        map[string]any
}

// checkBundle checks what is not Rego: the manifest's revision, entrypoint
// and Rego version, that there are modules, and the data (whose warnings it
// returns, even with an error).
func checkBundle(b Bundle) (bundleSource, []string, error) {
	src := bundleSource{name: ShortRevision(b.Manifest.Revision)}
	if src.name == "" {
		src.name = "(no revision)"
	}
	if err := checkRevision(b.Manifest.Revision); err != nil {
		return src, nil, fmt.Errorf("policy %s: %w", src.name, inFile(ManifestFile, err))
	}
	var err error
	if src.query, err = b.Manifest.Query(); err != nil {
		return src, nil, fmt.Errorf("policy %s: %w", src.name, inFile(ManifestFile, fmt.Errorf("manifest: %w", err)))
	}
	if src.regoVersion, err = b.regoVersion(); err != nil {
		return src, nil, fmt.Errorf("policy %s: %w", src.name, inFile(ManifestFile, err))
	}
	if len(b.Modules) == 0 {
		return src, nil, fmt.Errorf("policy %s: no Rego modules", src.name)
	}
	src.data = b.Data
	if src.data == nil {
		src.data = map[string]any{}
	}
	warnings, err := ValidateData(src.data)
	if err != nil {
		return src, warnings, fmt.Errorf("policy %s: %w", src.name, inFile(DataFile, err))
	}
	return src, warnings, nil
}

// compileModules parses and compiles the bundle's modules, with the
// generated grants if generate and the policy reads them, and checks that
// they define the entrypoint, whose reference it returns.
func compileModules(b Bundle, src bundleSource, generate bool) (*ast.Compiler, ast.Ref, error) {
	modules, err := b.parseModules(src.regoVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("policy %s: %w", src.name, err)
	}
	if err := checkNotGenerated(modules); err != nil {
		return nil, nil, fmt.Errorf("policy %s: %w", src.name, err)
	}
	if generate && refersToGenerated(modules) {
		mod, err := generateGrants(src.data)
		if err != nil {
			return nil, nil, fmt.Errorf("policy %s: %w", src.name, inFile(DataFile, err))
		}
		modules[generatedModulePath] = mod
	}
	compiler := ast.NewCompiler().WithDefaultRegoVersion(src.regoVersion).WithEnablePrintStatements(false).
		WithCapabilities(b.Capabilities.opa())
	compiler.Compile(modules)
	if compiler.Failed() {
		explainUndefined(compiler.Errors, b.Capabilities)
		return nil, nil, fmt.Errorf("policy %s does not compile: %w", src.name, compiler.Errors)
	}
	ref := ast.MustParseRef(src.query)
	if len(compiler.GetRules(ref)) == 0 {
		files := b.modulePaths()
		if b.Manifest.Metadata.Entrypoint != "" {
			files = append(files, ManifestFile)
		}
		return nil, nil, fmt.Errorf("policy %s: %w", src.name, &fileError{files: files,
			err: fmt.Errorf("defines no rule %s (the entrypoint; set metadata.entrypoint in %s to use another)", src.query, ManifestFile)})
	}
	return compiler, ref, nil
}

// prepareCompiled prepares what the engine evaluates: the data's role
// index and store, the prepared query and its compiled body.
func prepareCompiled(ctx context.Context, b Bundle, src bundleSource, compiler *ast.Compiler, ref ast.Ref, iqvc cache.InterQueryValueCache) (*compiled, error) {
	data := src.data
	roles, err := newRoleIndex(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", src.name, inFile(DataFile, fmt.Errorf("bindings: %w", err)))
	}
	store := inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	ropts := []func(*rego.Rego){
		rego.Compiler(compiler),
		rego.Store(store),
		rego.Query(src.query),
	}
	if iqvc != nil {
		ropts = append(ropts, rego.InterQueryBuiltinValueCache(iqvc))
	}
	pq, err := rego.New(ropts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy %s does not compile: %w", src.name, err)
	}
	qc := compiler.QueryCompiler()
	body, err := qc.Compile(ast.NewBody(ast.Equality.Expr(ast.VarTerm(string(resultVar)), ast.NewTerm(ref))))
	if err != nil {
		return nil, fmt.Errorf("policy %s does not compile: %w", src.name, err)
	}
	return &compiled{
		query: pq,
		body:  body,
		iqvc:  iqvc,

		queryCompiler: qc,
		compiler:      compiler,
		store:         store,
		revision:      b.Manifest.Revision,
		enforcing:     b.Manifest.IsEnforcing(),
		withPath:      b.Manifest.Metadata.CacheKeyIncludesPath,
		checker:       newChecker(),
		values:        newInputValues(roles, controlPlaneNamespace(data), b.Manifest.Metadata.CacheKeyIncludesPath),
		evalCaches:    &evalCaches{},

		controlPlane: controlPlaneNamespace(data),
	}, nil
}
