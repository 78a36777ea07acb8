package policycli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestPolicyCommands(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "policy.csv")
	if err := os.WriteFile(csv, []byte("p, role:dev, extensions, invoke, metrics, allow\ng, alice, role:dev\np, bob, clusters, get, *, allow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := filepath.Join(dir, "refused.csv")
	if err := os.WriteFile(refused, []byte("g, bob, role:dev, extra\np, role:dev, extensions, invoke, metrics, allow\ng, alice, role:dev\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "p.rego"), []byte("package x\nallow if {"), 0o600); err != nil {
		t.Fatal(err)
	}
	projects := filepath.Join(dir, "projects.yaml")
	if err := os.WriteFile(projects, []byte(`apiVersion: v1
kind: List
items:
- apiVersion: argoproj.io/v1alpha1
  kind: AppProject
  metadata: {name: team-a, namespace: argocd}
  spec:
    roles:
    - name: viewer
      groups: [dev]
      policies: ["p, proj:team-a:viewer, applications, get, team-a/*, allow"]
- apiVersion: argoproj.io/v1alpha1
  kind: AppProject
  metadata: {name: team-b, namespace: elsewhere}
  spec: {roles: [{name: r, groups: [ops]}]}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(dir, "twice.yaml")
	if err := os.WriteFile(twice, []byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team-a}\n---\napiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team-a, namespace: argocd}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rbacCM := filepath.Join(dir, "argocd-rbac-cm.yaml")
	if err := os.WriteFile(rbacCM, []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd}
data:
  policy.default: role:readonly
  policy.matchMode: Regex
  policy.csv: |
    p, role:dev, extensions, invoke, metrics, allow
  policy.team-b.csv: |
    g, alice, role:dev
    g, bob, role:dev, extra
  policy.csv.bak: |
    p, eve, extensions, invoke, *, allow
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []cliCase{
		{"shipped policy's Rego tests pass", []string{"policy", "test", "../extensions"}, 0, "PASS", ""},
		{"a policy that does not compile fails the test run", []string{"policy", "test", broken}, 2, "", "p.rego"},
		{"eval prints the decision and reason", []string{"policy", "eval", "--policy", "../extensions", "--input", "../extensions/input.example.json"}, 0, "reason:", ""},
		{"eval explains with a space before the mode", []string{"policy", "eval", "--policy", "../extensions", "--input", "../extensions/input.example.json", "--explain", "full"}, 0, "Enter data.gatehouse.extensions.decision", ""},
		{"eval explains notes by default", []string{"policy", "eval", "--policy", "../extensions", "--input", "../extensions/input.example.json", "--explain"}, 0, "extensionAllowedBy", ""},
		{"eval refuses another argument", []string{"policy", "eval", "--policy", "../extensions", "--input", "../extensions/input.example.json", "extra"}, 2, "", `unexpected argument "extra"`},
		{"eval needs both flags", []string{"policy", "eval", "--policy", "../extensions"}, 2, "", "--input"},
		{"import-casbin lists what it skipped", []string{"policy", "import-casbin", csv}, 0, `"role:dev"`, "line 3"},
		{"import-casbin fails a policy Argo CD refuses", []string{"policy", "import-casbin", refused}, 1, "", "--allow-partial"},
		{"import-casbin --allow-partial converts the other lines", []string{"policy", "import-casbin", "--allow-partial", refused}, 0, `"role:dev"`, "line 1: g, bob, role:dev, extra"},
		{"import-casbin holds AppProject roles", []string{"policy", "import-casbin", "--projects", projects, csv}, 0, `"proj:team-a:viewer (AppProject team-a)"`, "Argo CD reads AppProjects only from its own (argocd)"},
		{"import-casbin names an object that is no AppProject", []string{"policy", "import-casbin", "--projects", projects, csv}, 0, `"dev": [`, `ConfigMap "cm" is not an AppProject`},
		{"import-casbin refuses an AppProject given twice", []string{"policy", "import-casbin", "--projects", twice, csv}, 2, "", "give each AppProject once"},
		{"import-casbin reads argocd-rbac-cm as Argo CD does", []string{"policy", "import-casbin", "--rbac-configmap", rbacCM, "--allow-partial"}, 0, `"alice": [`, "policy.team-b.csv, line 2: g, bob, role:dev, extra"},
		{"import-casbin from argocd-rbac-cm takes policy.default", []string{"policy", "import-casbin", "--rbac-configmap", rbacCM, "--allow-partial"}, 0, `"defaultRoles": [`, `policy.matchMode is "Regex", not exactly "regex"`},
		{"import-casbin from argocd-rbac-cm refuses what Argo CD refuses", []string{"policy", "import-casbin", "--rbac-configmap", rbacCM}, 1, "", "--allow-partial"},
		{"import-casbin wants FILE or --rbac-configmap", []string{"policy", "import-casbin"}, 2, "", "give policy.csv as FILE, or argocd-rbac-cm with --rbac-configmap"},
		{"import-casbin refuses FILE and --rbac-configmap together", []string{"policy", "import-casbin", "--rbac-configmap", rbacCM, csv}, 2, "", "not both"},
		{"import-casbin reads policy.default from the ConfigMap", []string{"policy", "import-casbin", "--rbac-configmap", rbacCM, "--default-role", "role:admin"}, 2, "", "--default-role is read from the ConfigMap"},
		{"import-casbin wants a ConfigMap", []string{"policy", "import-casbin", "--rbac-configmap", projects}, 2, "", "want exactly one ConfigMap"},
		{"import-casbin of a missing file", []string{"policy", "import-casbin", filepath.Join(dir, "nope.csv")}, 2, "", "nope.csv"},
	}
	runCLICases(t, tests)
	var out, errb bytes.Buffer
	execute([]string{"policy", "import-casbin", csv}, &out, &errb)
	var data map[string]any
	if err := json.Unmarshal(out.Bytes(), &data); err != nil {
		t.Fatalf("import-casbin stdout is not JSON: %v", err)
	}
}
