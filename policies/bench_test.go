package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The benchmark's scale, from the issue: 1,000 grants over 200 roles, 500
// users and 50 groups.
const (
	benchRoles       = 200
	benchGrants      = 1000 // extension grants; each role also has one applications grant
	benchUsers       = 500
	benchGroups      = 50
	benchProjects    = 20
	benchExtensions  = 10
	benchNamespaces  = 40
	rolesPerUser     = 2
	rolesPerGroup    = 4
	groupsPerRequest = 3
)

// benchData builds a data.gatehouse document at the benchmark's scale, with
// every grant form: exact and glob extension names, project, namespace and
// application scopes, method lists and a few deny rules.
func benchData(seed uint64) map[string]any {
	return genData(seed, scale{benchRoles, benchUsers, benchGroups})
}

// scale is the size of generated data: roles, users and groups.
type scale struct{ roles, users, groups int }

func genData(seed uint64, sc scale) map[string]any {
	r := rand.New(rand.NewPCG(seed, 1))
	roles := map[string]any{}
	perRole := benchGrants / benchRoles
	for i := range sc.roles {
		proj := fmt.Sprintf("proj-%d", i%benchProjects)
		var ext []any
		for j := range perRole {
			g := map[string]any{"extension": fmt.Sprintf("ext-%d", r.IntN(benchExtensions))}
			// The mix: exact names and projects mostly; one grant in ten has a
			// glob extension name, one in five a glob project; some method
			// lists; a deny rule in one role in ten.
			switch j % 5 {
			case 0:
				g["project"] = proj
			case 1:
				g["project"] = proj
				g["namespace"] = fmt.Sprintf("ns-%d", r.IntN(benchNamespaces))
			case 2:
				g["project"] = proj
				g["application"] = fmt.Sprintf("app-%d*", r.IntN(10))
				g["methods"] = []any{"GET", "HEAD"}
			case 3:
				if i%2 == 0 {
					g["extension"] = "ext-*"
				}
				g["project"] = fmt.Sprintf("proj-%d*", r.IntN(3))
			case 4:
				if i%10 == 0 {
					g["effect"] = "deny"
					g["methods"] = []any{"DELETE"}
				} else {
					g["project"] = "*"
				}
			}
			ext = append(ext, g)
		}
		app := map[string]any{"project": proj}
		if i%2 == 0 {
			app = map[string]any{"object": proj + "/*"}
		}
		roles[fmt.Sprintf("role:%d", i)] = map[string]any{"applications": []any{app}, "extensions": ext}
	}
	users := map[string]any{}
	for u := range sc.users {
		var rs []any
		for range rolesPerUser {
			rs = append(rs, fmt.Sprintf("role:%d", r.IntN(sc.roles)))
		}
		users[fmt.Sprintf("user-%d", u)] = rs
	}
	groups := map[string]any{}
	for g := range sc.groups {
		var rs []any
		for range rolesPerGroup {
			rs = append(rs, fmt.Sprintf("role:%d", r.IntN(sc.roles)))
		}
		groups[fmt.Sprintf("group-%d", g)] = rs
	}
	return map[string]any{DataKey: map[string]any{
		"config":   map[string]any{"controlPlaneNamespace": "argocd"},
		"bindings": map[string]any{"users": users, "groups": groups},
		"roles":    roles,
	}}
}

func benchInputs(n int, seed uint64) []Input {
	return genInputs(n, seed, scale{benchRoles, benchUsers, benchGroups})
}

func genInputs(n int, seed uint64, sc scale) []Input {
	r := rand.New(rand.NewPCG(seed, 2))
	methods := []string{"GET", "GET", "GET", "POST", "DELETE"}
	ins := make([]Input, n)
	for i := range ins {
		proj := fmt.Sprintf("proj-%d", r.IntN(benchProjects))
		ns := fmt.Sprintf("ns-%d", r.IntN(benchNamespaces))
		var groups []string
		for range groupsPerRequest {
			groups = append(groups, fmt.Sprintf("group-%d", r.IntN(sc.groups)))
		}
		user := fmt.Sprintf("user-%d", r.IntN(sc.users))
		ins[i] = Input{
			User:      User{ID: user, Username: user, Groups: groups},
			Extension: fmt.Sprintf("ext-%d", r.IntN(benchExtensions)),
			Application: &Application{
				Namespace: ns, Name: fmt.Sprintf("app-%d", r.IntN(100)), Project: proj,
				Destination: Destination{Server: "https://kubernetes.default.svc", Namespace: "workloads"},
			},
			Project: &Project{
				Name: proj, SourceNamespaces: []string{"ns-*"},
				Destinations: []Destination{{Server: "https://kubernetes.default.svc", Namespace: "*"}},
			},
			Cluster: &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"},
			Request: Request{Method: methods[r.IntN(len(methods))], Path: "/api/v1/query"},
		}
	}
	return ins
}

// measure runs fn b.N times and reports the latency percentiles and the
// process CPU per operation.
func measure(b *testing.B, fn func(i int)) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		fn(i)
		lat = append(lat, time.Since(t))
	}
	cpu1 := processCPU()
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(float64(len(lat)-1)*p)].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

func benchEngine(b *testing.B, opts ...Option) *Engine {
	b.Helper()
	e := NewEngine(opts...)
	if err := e.Load(context.Background(), DefaultBundle(benchData(1))); err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkDecide(b *testing.B) {
	cases := []struct {
		name string
		opts []Option
		warm bool // decide every input once before measuring
	}{
		{name: "uncached", opts: []Option{WithCache(0, 0)}},
		// Decisions not in the decision cache (expired, or another extension
		// or method) for users, Applications and projects the engine has
		// seen before: the usual miss in a running proxy.
		{name: "uncached-seen", opts: []Option{WithCache(0, 0)}, warm: true},
		{name: "cached", opts: []Option{WithCache(100000, time.Hour)}, warm: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchDecide(b, benchEngine(b, c.opts...), c.warm)
		})
	}
}

// benchDecide measures Decide over the benchmark's inputs, each decided once
// before if warm; cold, each input is decided once.
func benchDecide(b *testing.B, e *Engine, warm bool) {
	b.Helper()
	ctx := context.Background()
	// Cold inputs stay cold at any -benchtime: one input per decision.
	n := 4096
	if !warm {
		n = max(n, b.N)
	}
	ins := benchInputs(n, 7)
	if warm {
		for _, in := range ins {
			if _, err := e.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	}
	measure(b, func(i int) {
		if _, err := e.Decide(ctx, ins[i%len(ins)]); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkDecideByOutcome is uncached-seen split by what the policy
// answers: an allowance, and each kind of denial (the denial's reason
// names the check that failed, which costs more rules than an allowance).
func BenchmarkDecideByOutcome(b *testing.B) {
	ctx := context.Background()
	e := benchEngine(b, WithCache(0, 0))
	kinds := []struct{ name, reason string }{
		{"allowed", "allowed"},
		{"denied-application", "denied: none of your roles may view"},
		{"denied-extension", "denied: none of your roles may "},
		{"denied-by-rule", "denied: a deny rule"},
	}
	byKind := map[string][]Input{}
	for _, in := range benchInputs(4096, 7) {
		d, err := e.Decide(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range kinds {
			if strings.HasPrefix(d.Reason, k.reason) {
				byKind[k.name] = append(byKind[k.name], in)
				break
			}
		}
	}
	for _, k := range kinds {
		ins := byKind[k.name]
		if len(ins) == 0 {
			b.Fatalf("no input is %s", k.name)
		}
		b.Run(k.name, func(b *testing.B) {
			measure(b, func(i int) {
				if _, err := e.Decide(ctx, ins[i%len(ins)]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDecideLogged is the cached path with the JSON decision log on
// (to io.Discard): the cost of a log line per decision.
func BenchmarkDecideLogged(b *testing.B) {
	benchDecide(b, benchEngine(b, WithCache(100000, time.Hour), WithDecisionLog(slog.New(slog.NewJSONHandler(io.Discard, nil)))), true)
}

func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	data := benchData(1)
	var before, after runtime.MemStats
	var keep []*Engine
	measure(b, func(i int) {
		if i == 0 {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		e := NewEngine()
		bundle := DefaultBundle(data)
		bundle.Manifest.Revision = fmt.Sprint(i)
		if err := e.Load(ctx, bundle); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			keep = append(keep, e)
			runtime.GC()
			runtime.ReadMemStats(&after)
		}
	})
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
	runtime.KeepAlive(keep)
}

// BenchmarkEvalBatch is `gatehouse policy eval --inputs` over 10,000 lines
// at the benchmark's scale: one op is the whole run, compile included.
func BenchmarkEvalBatch(b *testing.B) {
	bundle := DefaultBundle(benchData(1))
	var lines bytes.Buffer
	for i, in := range benchInputs(10000, 11) {
		raw, err := json.Marshal(batchLine{ID: json.RawMessage(fmt.Sprint(i)), Input: in})
		if err != nil {
			b.Fatal(err)
		}
		lines.Write(append(raw, '\n'))
	}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var s BatchSummary
			for b.Loop() {
				var err error
				s, err = EvalBatch(context.Background(), bundle, bytes.NewReader(lines.Bytes()), io.Discard, BatchOptions{Workers: workers})
				if err != nil || s.decided() != 10000 {
					b.Fatalf("%+v, %v", s, err)
				}
			}
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
