package admitcli

import "testing"

// admit reads its manifests from -f: a path given as an argument is refused
// with exit status 2 and the command line that gives it with -f, not with
// cobra's "unknown command".
func TestArgumentsAreAnsweredWithTheFlagThatTakesThem(t *testing.T) {
	runCLICases(t, []cliCase{
		{"a directory", []string{"admit", "examples/"}, 2, "", `admit: unexpected argument "examples/": admit takes no arguments; give the manifests with -f (a file, a directory, or - for standard input)` +
			"\ndid you mean: gatehouse admit -f examples/\nusage: gatehouse admit -f PATH... [flags]\nexample: gatehouse admit -f apps/"},
		{"two paths after a flag", []string{"admit", "-f", "apps/", "a.yaml", "b.yaml"}, 2, "", "did you mean: gatehouse admit -f a.yaml -f b.yaml"},
	})
}
