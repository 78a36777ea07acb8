package v1alpha1

import "testing"

func TestDeepCopySharesNothing(t *testing.T) {
	p := &AppProject{Spec: AppProjectSpec{
		SourceNamespaces: []string{"team-*"},
		Destinations:     []ApplicationDestination{{Server: "https://a"}},
		Roles:            []ProjectRole{{Name: "ci", JWTTokens: []JWTToken{{ID: "t1"}}}},
	}, Status: AppProjectStatus{JWTTokensByRole: map[string]JWTTokens{"ci": {Items: []JWTToken{{ID: "t1"}}}}}}
	p.Annotations = map[string]string{"k": "v"}
	c := p.DeepCopy()
	c.Spec.SourceNamespaces[0] = "changed"
	c.Spec.Destinations[0].Server = "changed"
	c.Spec.Roles[0].JWTTokens[0].ID = "changed"
	c.Status.JWTTokensByRole["ci"].Items[0].ID = "changed"
	c.Annotations["k"] = "changed"
	if p.Spec.SourceNamespaces[0] != "team-*" || p.Spec.Destinations[0].Server != "https://a" || p.Annotations["k"] != "v" ||
		p.Spec.Roles[0].JWTTokens[0].ID != "t1" || p.Status.JWTTokensByRole["ci"].Items[0].ID != "t1" {
		t.Fatalf("copy of AppProject shares memory with the original: %+v", p)
	}

	a := &Application{}
	a.Labels = map[string]string{"k": "v"}
	ac := a.DeepCopy()
	ac.Labels["k"] = "changed"
	if a.Labels["k"] != "v" {
		t.Fatal("copy of Application shares labels with the original")
	}
}

func TestProjectNameDefaults(t *testing.T) {
	var a Application
	if got := a.ProjectName(); got != "default" {
		t.Fatalf("empty spec.project = %q, want default", got)
	}
	a.Spec.Project = "team"
	if got := a.ProjectName(); got != "team" {
		t.Fatalf("spec.project = %q, want team", got)
	}
}
