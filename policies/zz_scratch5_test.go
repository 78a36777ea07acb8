package policies

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

func BenchmarkScratchQueries(b *testing.B) {
	e := NewEngine(WithCache(0, 0))
	ctx := context.Background()
	if err := e.Load(ctx, DefaultBundle(benchData(1))); err != nil {
		b.Fatal(err)
	}
	c := e.state.Load()
	ins := benchInputs(4096, 7)
	vals := make([]ast.Value, len(ins))
	for i := range ins {
		in := ins[i]
		in.normalize()
		vals[i] = c.input(&in)
	}
	for _, qs := range []string{"true", "x = input.extension", "x = data.gatehouse.generated.extension_allow", "x = data.gatehouse.generated.application_allow", "x = data.gatehouse.generated.deny", "x = data.gatehouse.extensions.input_complete", "x = data.gatehouse.extensions.project_permits", "x = data.gatehouse.extensions.decision"} {
		body, err := c.queryCompiler.Compile(ast.MustParseBody(qs))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(qs, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				txn, _ := c.store.NewTransaction(ctx)
				rules := c.ruleCaches.get()
				q := topdown.NewQuery(body).WithQueryCompiler(c.queryCompiler).WithCompiler(c.compiler).WithStore(c.store).WithTransaction(txn).
					WithInput(ast.NewTerm(vals[i%len(vals)])).WithIndexing(true).WithEarlyExit(true).WithInterQueryBuiltinValueCache(c.iqvc).WithMetrics(noMetrics).WithVirtualCache(rules)
				_ = q.Iter(ctx, func(topdown.QueryResult) error { return nil })
				c.ruleCaches.put(rules)
				c.store.Abort(ctx, txn)
			}
		})
	}
}
