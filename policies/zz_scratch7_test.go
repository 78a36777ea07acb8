package policies

import (
	"context"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func BenchmarkScratchClasses(b *testing.B) {
	e := NewEngine(WithCache(0, 0))
	ctx := context.Background()
	if err := e.Load(ctx, DefaultBundle(benchData(1))); err != nil {
		b.Fatal(err)
	}
	c := e.state.Load()
	ins := benchInputs(4096, 7)
	classes := map[string][]ast.Value{}
	for i := range ins {
		in := ins[i]
		in.normalize()
		d, _ := e.Decide(ctx, in)
		k := "allow"
		if !d.Allow {
			k = d.Reason[:min(len(d.Reason), 32)]
			k = strings.ReplaceAll(k, " ", "_")
		}
		classes[k] = append(classes[k], c.input(&in))
	}
	for k, vals := range classes {
		if len(vals) < 100 {
			continue
		}
		b.Run(k, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.evalQuery(ctx, vals[i%len(vals)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
