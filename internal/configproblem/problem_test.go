package configproblem

import (
	"errors"
	"fmt"
	"testing"
)

func TestProblemIsItsError(t *testing.T) {
	inner := errors.New("bad")
	tests := []struct {
		name string
		p    Problem
		want string
	}{
		{"no error", Problem{Kind: "ConfigMap", Name: "argocd-cm"}, ""},
		{"the error's text, word for word", Problem{Err: fmt.Errorf("%w; fix it", inner)}, "bad; fix it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	if !errors.Is(Problem{Err: fmt.Errorf("%w; fix it", inner)}, inner) {
		t.Error("a problem does not unwrap to what it was made of")
	}
}

func TestIDIsTheSameFaultFoundAgain(t *testing.T) {
	a := Problem{Kind: "ConfigMap", Name: "argocd-cm", Reason: "InvalidAuthConfig", Err: errors.New("oidc.config is broken")}
	again := a
	again.Err = errors.New("oidc.config is broken")
	if a.ID() != again.ID() {
		t.Error("the same fault, found again with a new error value, has another ID")
	}
	other := a
	other.Warning = true
	if a.ID() == other.ID() {
		t.Error("an error and a warning of the same text share an ID")
	}
}

func TestSortOrdersByObjectReasonText(t *testing.T) {
	ps := []Problem{
		{Kind: "Secret", Name: "a", Reason: "R", Err: errors.New("x")},
		{Kind: "ConfigMap", Name: "b", Reason: "R", Err: errors.New("x")},
		{Kind: "ConfigMap", Name: "a", Reason: "S", Err: errors.New("x")},
		{Kind: "ConfigMap", Name: "a", Reason: "R", Err: errors.New("y")},
		{Kind: "ConfigMap", Name: "a", Reason: "R", Err: errors.New("x")},
	}
	Sort(ps)
	var got []string
	for _, p := range ps {
		got = append(got, p.Kind+"/"+p.Name+" "+p.Reason+" "+p.Error())
	}
	want := []string{"ConfigMap/a R x", "ConfigMap/a R y", "ConfigMap/a S x", "ConfigMap/b R x", "Secret/a R x"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sorted %q, want %q", got, want)
	}
}
