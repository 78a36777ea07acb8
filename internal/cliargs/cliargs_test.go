package cliargs

import "testing"

// The example an error shows is the Example's first command line, whole:
// with the lines its trailing backslashes continue, and no further.
func TestFirstExample(t *testing.T) {
	for example, want := range map[string]string{
		"": "",
		"  gatehouse dev\n  gatehouse dev --tour":              "gatehouse dev",
		"  gatehouse proxy --a \\\n    --b\n  gatehouse proxy": "gatehouse proxy --a \\\n    --b",
	} {
		if got := firstExample(example); got != want {
			t.Errorf("firstExample(%q) = %q, want %q", example, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	a, b := Arg{Name: "A", What: "an a"}, Arg{Name: "B", What: "a b"}
	for _, tt := range []struct {
		want     []Arg
		required int
		out      string
	}{
		{[]Arg{a}, 1, "one argument, A (an a)"},
		{[]Arg{a}, 0, "at most one argument, A (an a)"},
		{[]Arg{a, b}, 2, "2 arguments: A (an a), B (a b)"},
		{[]Arg{a, b}, 0, "at most 2 arguments: A (an a), B (a b)"},
	} {
		if got := describe(tt.want, tt.required); got != tt.out {
			t.Errorf("describe = %q, want %q", got, tt.out)
		}
	}
}
