package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
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
	return genData(seed, scale{roles: benchRoles, users: benchUsers, groups: benchGroups})
}

// scale is the size of generated data: roles (each with benchGrants /
// benchRoles extension grants), users and groups, and the projects and
// namespaces the grants and requests name (zero: the benchmark's 20 and
// 40).
type scale struct{ roles, users, groups, projects, namespaces int }

func (sc scale) nProjects() int {
	if sc.projects == 0 {
		return benchProjects
	}
	return sc.projects
}

func (sc scale) nNamespaces() int {
	if sc.namespaces == 0 {
		return benchNamespaces
	}
	return sc.namespaces
}

// grantScale is the benchmark's scale at n extension grants: roles, users
// and groups grow with the grants, so each user holds as many roles, and
// each role as many grants, at any n; the projects, namespaces and
// extensions stay, so the requests' mix of outcomes (about half allowed,
// half denied the Application) is the same at every n, and each request
// has n/1,000 times as many grants of its project and extension to be
// picked from. At 1,000 it is the benchmark's scale.
func grantScale(n int) scale {
	return scale{roles: n * benchRoles / benchGrants, users: n * benchUsers / benchGrants, groups: n * benchGroups / benchGrants}
}

func genData(seed uint64, sc scale) map[string]any {
	r := rand.New(rand.NewPCG(seed, 1))
	roles := map[string]any{}
	perRole := benchGrants / benchRoles
	for i := range sc.roles {
		proj := fmt.Sprintf("proj-%d", i%sc.nProjects())
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
				g["namespace"] = fmt.Sprintf("ns-%d", r.IntN(sc.nNamespaces()))
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
	return genInputs(n, seed, scale{roles: benchRoles, users: benchUsers, groups: benchGroups})
}

func genInputs(n int, seed uint64, sc scale) []Input {
	r := rand.New(rand.NewPCG(seed, 2))
	methods := []string{"GET", "GET", "GET", "POST", "DELETE"}
	ins := make([]Input, n)
	for i := range ins {
		proj := fmt.Sprintf("proj-%d", r.IntN(sc.nProjects()))
		ns := fmt.Sprintf("ns-%d", r.IntN(sc.nNamespaces()))
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

// grantCurve is the number of extension grants BenchmarkDecideGrants and
// BenchmarkCompileGrants measure at (issue 27 §3).
var grantCurve = []int{100, 1000, 10000}

var floorSeed = maphash.MakeSeed()

// floorNode is one of floor-alloc's objects: 48 bytes, a pointer in each,
// as the Rego terms and bindings of a decision.
type floorNode struct {
	next *floorNode
	_    [5]uint64
}

// floorObjects of floorNode are 146 × 48 = 7.0 KB: an uncached decision's
// 146 allocations and most of its 7.8 KB.
const floorObjects = 146

// floorGarbage keeps floor-alloc's objects of one operation until the next,
// so the compiler cannot drop them.
var floorGarbage *floorNode

// decideRounds is how many rounds BenchmarkDecideGrants splits its b.N
// decisions into: a target on the p99 holds when it holds in every round.
const decideRounds = 3

// BenchmarkDecideGrants is BenchmarkDecide's uncached and cached decisions
// at 100, 1,000 and 10,000 grants (grantScale: users, groups and roles grow
// with the grants). Each of decideRounds rounds of b.N/3 decisions, timed one
// by one with garbage collection running as it does, gives its own p99:
// p99-min-µs, p99-med-µs and p99-max-µs are the fastest, middle and slowest
// round's, p50-µs and p99-µs those of all decisions. Uncached, each decision
// has an input of its own (a user with a set of groups and an Application
// the engine has not seen: its Rego values are built), as in
// BenchmarkDecide; cached, every input was decided once before. At the
// default -benchtime a round holds about 10,000 decisions. It needs about
// 300 MB at 10,000 grants (the compiled policy is about 130 MB of it).
func BenchmarkDecideGrants(b *testing.B) {
	// The machine's floor, the same run's baseline for the p99s: a fixed
	// piece of work that neither allocates nor reads a large heap, about as
	// long as an uncached decision's p50, timed the same way. Its p99 over
	// its p50 is what the host (other processes, the scheduler) adds.
	b.Run("floor", func(b *testing.B) {
		buf := make([]byte, 64<<10)
		var sum uint64
		measureRounds(b, decideRounds, func(int) {
			for range 5 {
				sum += maphash.Bytes(floorSeed, buf)
			}
		})
		runtime.KeepAlive(sum)
	})
	// The same work allocating about what an uncached decision at 1,000
	// grants does (146 objects, 7.0 KB against 7.8, pointers in each, garbage by the next
	// operation) on the same heap as the decisions (the inputs of one
	// uncached run of grants=1000 and a compiled policy at 1,000 grants):
	// what allocation and garbage collection add on this host to work as
	// long as a decision, with no policy evaluated.
	b.Run("floor-alloc", func(b *testing.B) {
		e := NewEngine(WithCache(0, 0))
		if err := e.Load(context.Background(), DefaultBundle(genData(1, grantScale(1000)))); err != nil {
			b.Fatal(err)
		}
		ins := genInputs(max(4096, b.N), 7, grantScale(1000))
		buf := make([]byte, 64<<10)
		var sum uint64
		measureRounds(b, decideRounds, func(int) {
			for range 5 {
				sum += maphash.Bytes(floorSeed, buf)
			}
			var head *floorNode
			for range floorObjects {
				head = &floorNode{next: head}
			}
			floorGarbage = head
		})
		runtime.KeepAlive(sum)
		runtime.KeepAlive(e)
		runtime.KeepAlive(ins)
	})
	for _, n := range grantCurve {
		sc := grantScale(n)
		for _, c := range []struct {
			name string
			opts []Option
			warm bool
		}{
			{name: "uncached", opts: []Option{WithCache(0, 0)}},
			{name: "cached", opts: []Option{WithCache(100000, time.Hour)}, warm: true},
		} {
			b.Run(fmt.Sprintf("grants=%d/%s", n, c.name), func(b *testing.B) {
				e := NewEngine(c.opts...)
				if err := e.Load(context.Background(), DefaultBundle(genData(1, sc))); err != nil {
					b.Fatal(err)
				}
				benchDecideRounds(b, e, c.warm, sc)
			})
		}
	}
}

// benchDecideRounds is benchDecide at scale sc, measured in rounds.
func benchDecideRounds(b *testing.B, e *Engine, warm bool, sc scale) {
	b.Helper()
	ctx := context.Background()
	n := 4096
	if !warm {
		n = max(n, b.N)
	}
	ins := genInputs(n, 7, sc)
	if warm {
		for _, in := range ins {
			if _, err := e.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	}
	measureRounds(b, decideRounds, func(i int) {
		if _, err := e.Decide(ctx, ins[i%len(ins)]); err != nil {
			b.Fatal(err)
		}
	})
}

// measureRounds is measure with b.N operations split into rounds
// consecutive rounds, each reporting its own p99 (see
// BenchmarkDecideGrants); fewer than 100 operations a round make no round
// p99s.
func measureRounds(b *testing.B, rounds int, fn func(i int)) {
	b.Helper()
	lat := make([]time.Duration, b.N)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	gc0 := readGCStats()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		fn(i)
		lat[i] = time.Since(t)
	}
	gc1 := readGCStats()
	cpu1 := processCPU()
	b.StopTimer()
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	gc1.report(b, gc0)
	if per := b.N / rounds; per >= 100 {
		p99s := make([]float64, rounds)
		for r := range rounds {
			p99s[r] = percentile(lat[r*per:(r+1)*per], 0.99)
		}
		slices.Sort(p99s)
		b.ReportMetric(p99s[0], "p99-min-µs")
		b.ReportMetric(p99s[rounds/2], "p99-med-µs")
		b.ReportMetric(p99s[rounds-1], "p99-max-µs")
	}
	b.ReportMetric(percentile(lat, 0.50), "p50-µs")
	b.ReportMetric(percentile(lat, 0.99), "p99-µs")
}

// gcStats are the runtime's counts of garbage collection: the cycles
// completed, and the CPU its marking and pauses took and all of the
// process's, as the runtime estimates them (runtime/metrics' /cpu/classes).
type gcStats struct {
	cycles          uint64
	gcCPU, totalCPU float64
}

var gcSamples = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/mark/dedicated:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/gc/pause:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
}

func readGCStats() gcStats {
	samples := make([]metrics.Sample, len(gcSamples))
	for i, name := range gcSamples {
		samples[i].Name = name
	}
	metrics.Read(samples)
	var s gcStats
	for _, m := range samples {
		switch {
		case m.Value.Kind() == metrics.KindUint64:
			s.cycles = m.Value.Uint64()
		case m.Value.Kind() != metrics.KindFloat64:
			// not supported by this runtime
		case m.Name == "/cpu/classes/total:cpu-seconds":
			s.totalCPU = m.Value.Float64()
		default:
			s.gcCPU += m.Value.Float64()
		}
	}
	return s
}

// report gives the garbage collection between before and s: the cycles
// completed (gc-cycles), and the share of the process's CPU that marking
// and pauses took (gc-cpu-%; the runtime updates its estimates at the end
// of each cycle, so the share is that of the cycles completed).
func (s gcStats) report(b *testing.B, before gcStats) {
	b.ReportMetric(float64(s.cycles-before.cycles), "gc-cycles")
	if total := s.totalCPU - before.totalCPU; total > 0 {
		b.ReportMetric(100*(s.gcCPU-before.gcCPU)/total, "gc-cpu-%")
	}
}

// percentile sorts lat and returns its p-th percentile in µs.
func percentile(lat []time.Duration, p float64) float64 {
	slices.Sort(lat)
	return float64(lat[int(float64(len(lat)-1)*p)].Nanoseconds()) / 1e3
}

// BenchmarkCompileGrants is BenchmarkCompile at 100, 1,000 and 10,000
// grants (grantScale): parse, generate the grant rules, compile and
// prepare, what a proxy does for each new policy version.
func BenchmarkCompileGrants(b *testing.B) {
	for _, n := range grantCurve {
		data := genData(1, grantScale(n))
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			// The heap a compiled policy holds, measured apart from the
			// timed compiles.
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep := NewEngine()
			if err := keep.Load(context.Background(), DefaultBundle(data)); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			measure(b, func(i int) {
				bundle := DefaultBundle(data)
				bundle.Manifest.Revision = fmt.Sprint(i)
				if err := NewEngine().Load(context.Background(), bundle); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
			runtime.KeepAlive(keep)
		})
	}
}
