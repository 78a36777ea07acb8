package casbindiff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// TestRandomPoliciesAgreeWithArgoCD compares random policies built from the
// pieces that matter: subjects of every kind, g line chains, resources,
// actions and objects with globs (or regular expressions), every effect,
// now and then a line Argo CD refuses. The seed is printed; run one again
// with GATEHOUSE_CASBINDIFF_SEED, and more with GATEHOUSE_CASBINDIFF_N.
func TestRandomPoliciesAgreeWithArgoCD(t *testing.T) {
	rng, seed, n := randomRun(t, 40, "policies")
	o := argoCD(t)
	var total outcome
	for i := 0; i < n; i++ {
		c := randomPolicy(rng, i)
		t.Run(c.name, func(t *testing.T) {
			out := compare(t, o, c, everyone)
			total.requests += out.requests
			total.allowed += out.allowed
			total.stricter += out.stricter
		})
		if t.Failed() {
			t.Fatalf("seed %d: policy %d fails; GATEHOUSE_CASBINDIFF_SEED=%d reproduces it", seed, i, seed)
		}
	}
	t.Logf("%d requests: Argo CD allows %d; Gatehouse denies %d of those, each explained by the report", total.requests, total.allowed, total.stricter)
}

// randomRun returns the generator of a random test: its seed is
// GATEHOUSE_CASBINDIFF_SEED or the clock's, printed so that a failure can
// be run again, and it runs GATEHOUSE_CASBINDIFF_N cases (default n).
func randomRun(t *testing.T, n int, what string) (*rand.Rand, uint64, int) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GATEHOUSE_CASBINDIFF_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("GATEHOUSE_CASBINDIFF_SEED: %v", err)
		}
	}
	if s := os.Getenv("GATEHOUSE_CASBINDIFF_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("GATEHOUSE_CASBINDIFF_N: %v", err)
		}
	}
	t.Logf("seed %d (GATEHOUSE_CASBINDIFF_SEED=%d reproduces it), %d %s", seed, seed, n, what)
	return rand.New(rand.NewPCG(seed, seed>>1|1)), seed, n
}

func pick[T any](rng *rand.Rand, list ...T) T { return list[rng.IntN(len(list))] }

var (
	randomUsers  = []string{"alice", "bob", "carol", "dave", "admin", "erin", "proj:team-a:ci", "proj:team-b:deploy", "role:admin", ""}
	randomGroups = []string{"dev", "ops", "team-a", "my-org:team-b", "contractors", ""}
	randomRoles  = []string{"role:r0", "role:r1", "role:r2", "role:r3", "role:r4", "role:readonly", "role:admin", ""}
	resources    = []string{"applications", "extensions", "*", "app*", "ext*", "", "Applications", "logs", "[", "*s"}
	actions      = []string{"get", "invoke", "*", "g?t", "", "GET", "in*", "sync", `"{get,invoke}"`}
	globObjects  = []string{"*", "*/*", "team-a/*", "team-b/secret-*", "*/team-a-ns/*", "team-?/*", "*-db", "", "[unclosed",
		"metrics", "metrics*", "*s", "team-a/guestbook", "*/guestbook", `\*`, "t*a/*", "*/*/*", "team-a/team-a-ns/*",
		"team-[ab]/*", "*/[!s]*", `"{team-a,default}/*"`, `"{metrics,logs}"`, "h?tpbin", "team-b*", "*a*",
		"logs*logs", `"{metrics,}"`, `"{,logs}*"`, "team-a/guestbook*guestbook", `metrics\`, "{logs",
		"cost*report", "metrics*s", "c*t", "team-a/g*k", `co\*st*t`}
	regexObjects = []string{".*", "^team-a/.*$", "metrics", "^metrics$", "team-(a|b)/.*", "(", "^.+/guestbook$", "s?ecret",
		"(?i)METRICS", "a+", "", "^team-b/", "logs$", "[a-m]etrics", "^[^/]+/api$", "."}
	effects = []string{"allow", "allow", "allow", "deny", "deny", "Allow", "maybe"}
)

func randomPolicy(rng *rand.Rand, i int) policyCase {
	c := policyCase{name: fmt.Sprintf("policy %d", i), random: true}
	if rng.IntN(4) == 0 {
		c.defaultRole = pick(rng, "role:readonly", "role:r0", "role:r1")
	}
	objects := globObjects
	if rng.IntN(5) == 0 {
		c.matchMode, objects = "regex", regexObjects
	}
	subjectOf := func() string {
		switch rng.IntN(3) {
		case 0:
			return pick(rng, randomUsers...)
		case 1:
			return pick(rng, randomGroups...)
		}
		return pick(rng, randomRoles...)
	}
	var lines []string
	for j, n := 0, 4+rng.IntN(16); j < n; j++ {
		switch rng.IntN(10) {
		case 0, 1, 2:
			lines = append(lines, fmt.Sprintf("g, %s, %s", subjectOf(), pick(rng, randomRoles...)))
		case 3:
			// A chain of role:c<k> from a subject, long enough to pass casbin's limit now and then.
			from, hops := subjectOf(), 8+rng.IntN(5)
			for k := 1; k <= hops; k++ {
				lines = append(lines, fmt.Sprintf("g, %s, role:c%d", from, k))
				from = fmt.Sprintf("role:c%d", k)
			}
			lines = append(lines, fmt.Sprintf("g, %s, %s", from, pick(rng, randomRoles...)))
		default:
			res, act := pick(rng, resources...), pick(rng, actions...)
			switch rng.IntN(5) {
			case 0, 1:
				res, act = "applications", "get"
			case 2, 3:
				res, act = "extensions", "invoke"
			}
			lines = append(lines, fmt.Sprintf("p, %s, %s, %s, %s, %s", subjectOf(), res, act, pick(rng, objects...), pick(rng, effects...)))
		}
	}
	// Broad grants now and then, so that Argo CD allows enough requests for
	// the deny rules, chains and confinement to matter.
	for _, grant := range []string{"applications, get, */*", "extensions, invoke, *"} {
		for k := rng.IntN(3); k > 0; k-- {
			lines = append(lines, fmt.Sprintf("p, %s, %s, allow", subjectOf(), grant))
		}
	}
	if rng.IntN(15) == 0 {
		lines = append(lines, pick(rng, "g, bob, role:r0, extra", "p, bob, extensions, invoke, *", "x, y"))
	}
	rng.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	if rng.IntN(4) == 0 {
		lines = randomConfigMap(rng, &c, lines)
	}
	c.csv = strings.Join(lines, "\n")
	if rng.IntN(2) == 0 {
		c.roles = randomProjectRoles(rng, subjectOf, objects)
	}
	return c
}

// randomConfigMap moves some lines to other policy.<name>.csv keys of
// argocd-rbac-cm, adds keys Argo CD does not read as policy (holding grants
// of everything), and now and then a policy.matchMode that is not exactly
// "regex". It returns the lines left for policy.csv.
func randomConfigMap(rng *rand.Rand, c *policyCase, lines []string) []string {
	c.extra = map[string]string{}
	var keep []string
	names := []string{"policy.a.csv", "policy.team-b.csv", "policy.zz.csv"}
	for _, l := range lines {
		if rng.IntN(2) == 0 {
			keep = append(keep, l)
			continue
		}
		k := pick(rng, names...)
		c.extra[k] += l + "\n"
	}
	decoy := fmt.Sprintf("p, %s, *, *, *, allow", pick(rng, "alice", "bob", "dev", ""))
	c.extra[pick(rng, "policy.csv.bak", "policy.x.CSV", "extra.csv", "policy.csv ")] = decoy
	if c.matchMode == "" && rng.IntN(3) == 0 {
		c.extra["policy.matchMode"] = pick(rng, "Regex", "regexp", "glob ")
	}
	return keep
}

// randomProjectRoles gives some of the projects roles: lines of any
// subject (the role's own token, users, groups, roles), g lines, groups,
// and now and then a line Argo CD cannot load.
func randomProjectRoles(rng *rand.Rand, subjectOf func() string, objects []string) map[string][]casbin.ProjectRole {
	out := map[string][]casbin.ProjectRole{}
	for _, project := range projects {
		for n := rng.IntN(3); n > 0; n-- {
			r := casbin.ProjectRole{Name: pick(rng, "ci", "deploy", "viewer", "ci,x")}
			token := "proj:" + project + ":" + r.Name
			for k := rng.IntN(4); k > 0; k-- {
				r.Groups = append(r.Groups, pick(rng, randomGroups...))
			}
			for k := 1 + rng.IntN(4); k > 0; k-- {
				sub := subjectOf()
				if rng.IntN(2) == 0 {
					sub = token
				}
				switch rng.IntN(8) {
				case 0:
					r.Policies = append(r.Policies, fmt.Sprintf("g, %s, %s", sub, pick(rng, randomRoles...)))
				case 1:
					r.Policies = append(r.Policies, fmt.Sprintf("p, %s, extensions, invoke, %s, %s", sub, pick(rng, objects...), pick(rng, effects...)))
				default:
					obj := pick(rng, objects...)
					if rng.IntN(2) == 0 {
						obj = pick(rng, project+"/*", project+"/guestbook", "*/*")
					}
					r.Policies = append(r.Policies, fmt.Sprintf("p, %s, applications, get, %s, %s", sub, obj, pick(rng, effects...)))
				}
			}
			if rng.IntN(20) == 0 {
				r.Policies = append(r.Policies, pick(rng, "g, a, b, c", "p, x, applications, get", "q, y"))
			}
			out[project] = append(out[project], r)
		}
	}
	return out
}
