package casbin

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func importFile(t *testing.T, name string, opts Options) *Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Import(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the import (go test -update rewrites it):\n%s", name, got)
	}
}

func TestImportGolden(t *testing.T) {
	for _, c := range []struct {
		csv  string
		opts Options
	}{
		{"argocd-docs.csv", Options{DefaultRole: "role:readonly"}},
		{"edge-cases.csv", Options{}},
	} {
		t.Run(c.csv, func(t *testing.T) {
			res := importFile(t, c.csv, c.opts)
			data, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var report bytes.Buffer
			if err := res.WriteReport(&report); err != nil {
				t.Fatal(err)
			}
			base := strings.TrimSuffix(c.csv, ".csv")
			golden(t, base+".golden.json", data)
			golden(t, base+".report.golden.txt", report.Bytes())
		})
	}
}

func TestImportListsEveryLine(t *testing.T) {
	res := importFile(t, "edge-cases.csv", Options{})
	want := map[int]string{
		19: "matches no <project>/<application>",
		22: "not a valid glob",
		23: "has 4 fields, want 6",
		24: "neither allow nor deny",
		25: "has 4 fields, want 3",
		26: `unknown line type "x"`,
	}
	got := map[int]string{}
	for _, s := range slices.Concat(res.Unconverted, res.Refused, res.Stricter) {
		got[s.Number] = s.Reason
	}
	for n, w := range want {
		if !strings.Contains(got[n], w) {
			t.Errorf("line %d: reason %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want)+1 { // and line 12, stricter
		t.Errorf("unconverted %v, refused %v", res.Unconverted, res.Refused)
	}

	// Every p and g line of the docs is converted or listed.
	docs := importFile(t, "argocd-docs.csv", Options{DefaultRole: "role:readonly"})
	raw, _ := os.ReadFile("testdata/argocd-docs.csv")
	listed := map[int]bool{}
	for _, s := range slices.Concat(docs.Refused, docs.Unconverted, docs.Ignored) {
		listed[s.Number] = true
	}
	converted := 0
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "p,") && !listed[i+1] {
			converted++
		}
	}
	if converted != 7 {
		t.Errorf("%d p lines converted, want the 7 that grant or deny applications/get or extensions/invoke on objects the extension proxy checks", converted)
	}
}

// A user whose id is a role name does not hold that role in Gatehouse (casbin
// would grant it): the importer binds no "role:" names, and says so.
func TestImportDoesNotBindRoleNames(t *testing.T) {
	res := importFile(t, "argocd-docs.csv", Options{})
	if _, ok := res.Data.Bindings.Users["role:admin"]; ok {
		t.Fatal("role:admin bound as a user")
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, `"role:"`)
	}
	if !noted {
		t.Fatal("no note about role names")
	}
}

func TestImportRefusesUnknownMatchMode(t *testing.T) {
	if _, err := Import(strings.NewReader(""), Options{MatchMode: "regexp"}); err == nil {
		t.Fatal("match mode regexp accepted")
	}
}

// AppProject roles: what the report says of their lines. What they decide
// is held to Argo CD's enforcer in test/casbindiff.
func TestImportProjects(t *testing.T) {
	csv := "p, role:ext, extensions, invoke, *, allow\ng, dev, role:ext\n"
	for _, c := range []struct {
		name     string
		roles    []ProjectRole
		role     string // a role the import must make
		report   string // in the report
		partial  bool
		noReport string // not in the report
	}{
		{name: "a group's project role", roles: []ProjectRole{{Name: "viewer", Groups: []string{"dev"}, Policies: []string{"p, proj:team-a:viewer, applications, get, team-a/*, allow"}}},
			role: "proj:team-a:viewer (AppProject team-a)", report: `"<subject> (AppProject <project>)"`, noReport: "projects, get"},
		{name: "a global role reached through the project", roles: []ProjectRole{{Name: "r", Policies: []string{"g, ops, role:readonly"}}},
			role: "role:readonly (project team-a)"},
		{name: "extensions lines never apply", roles: []ProjectRole{{Name: "r", Policies: []string{"p, dev, extensions, invoke, *, allow"}}},
			report: "AppProject team-a, role r, policies[0]: p, dev, extensions, invoke, *, allow\n    Argo CD adds AppProject team-a's roles only to checks on the project's Applications"},
		{name: "a line Argo CD cannot load leaves out the project, not the policy", roles: []ProjectRole{{Name: "r", Groups: []string{"dev"}, Policies: []string{"p, x, applications, get"}}},
			report: "Argo CD cannot load the roles of AppProject team-a because of this line (a p line has 4 fields, want 6)", noReport: "Argo CD refuses the whole policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Import(strings.NewReader(csv), Options{Projects: []Project{{Name: "team-a", Roles: c.roles}}})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := res.WriteReport(&b); err != nil {
				t.Fatal(err)
			}
			if res.Partial() != c.partial {
				t.Errorf("partial %v, want %v", res.Partial(), c.partial)
			}
			if _, ok := res.Data.Roles[c.role]; c.role != "" && !ok {
				t.Errorf("no role %q; roles: %v", c.role, slices.Sorted(maps.Keys(res.Data.Roles)))
			}
			if !strings.Contains(b.String(), c.report) {
				t.Errorf("report lacks %q:\n%s", c.report, b.String())
			}
			if c.noReport != "" && strings.Contains(b.String(), c.noReport) {
				t.Errorf("report has %q:\n%s", c.noReport, b.String())
			}
		})
	}
}
