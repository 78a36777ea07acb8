package policycli

import "testing"

// A missing or extra argument is refused with exit status 2 and a message
// naming the argument, what it is, the usage line and an example; a word
// that is not a subcommand of policy is refused with the list of them.
func TestArgumentErrorsNameTheArgumentAndShowAnExample(t *testing.T) {
	runCLICases(t, []cliCase{
		{"init without DIR", []string{"policy", "init"}, 2, "", "policy init: missing argument DIR (the policy directory to write; created if missing)\nusage: gatehouse policy init DIR [flags]\nexample: gatehouse policy init policy/"},
		{"init with two", []string{"policy", "init", "a", "b"}, 2, "", `policy init: unexpected argument "b": init takes one argument, DIR`},
		{"test without DIR", []string{"policy", "test"}, 2, "", "policy test: missing argument DIR (the policy directory whose tests to run)\nusage: gatehouse policy test DIR [flags]\nexample: gatehouse policy test policy/"},
		{"test with two", []string{"policy", "test", "a", "b"}, 2, "", `policy test: unexpected argument "b": test takes one argument, DIR`},
		{"build without DIR", []string{"policy", "build"}, 2, "", "policy build: missing argument DIR (the policy directory to build)\nusage: gatehouse policy build DIR [flags]\nexample: gatehouse policy build ./policy -o bundle.tar.gz"},
		{"build with two", []string{"policy", "build", "a", "b"}, 2, "", `policy build: unexpected argument "b": build takes one argument, DIR`},
		{"push without BUNDLE", []string{"policy", "push"}, 2, "", "policy push: missing argument BUNDLE (the bundle file gatehouse policy build wrote)\nusage: gatehouse policy push BUNDLE oci://HOST/REPOSITORY:TAG [flags]\nexample: gatehouse policy push bundle.tar.gz oci://"},
		{"push without the reference", []string{"policy", "push", "bundle.tar.gz"}, 2, "", "policy push: missing argument oci://HOST/REPOSITORY:TAG (where to push it)"},
		{"push with three", []string{"policy", "push", "a", "b", "c"}, 2, "", `policy push: unexpected argument "c": push takes 2 arguments: BUNDLE (`},
		{"import-casbin with two", []string{"policy", "import-casbin", "a.csv", "b.csv"}, 2, "", `policy import-casbin: unexpected argument "b.csv": import-casbin takes at most one argument, FILE (Argo CD's policy.csv, or - for standard input)` + "\nusage: gatehouse policy import-casbin [FILE] [flags]\nexample: gatehouse policy import-casbin policy.csv"},
		{"eval with an argument", []string{"policy", "eval", "policy/"}, 2, "", `policy eval: unexpected argument "policy/": give the policy with --policy, the input with --input and the explain mode as --explain=notes|fails|full` + "\nusage: gatehouse policy eval --policy DIR (--input FILE | --inputs FILE) [flags]\nexample: gatehouse policy eval --policy policy/"},
		{"an unknown subcommand", []string{"policy", "tset", "policy/"}, 2, "", `policy: unknown command "tset" for gatehouse policy; its commands are build, eval, import-casbin, init, push, test` + "\ndid you mean: gatehouse policy test\nusage: gatehouse policy COMMAND [flags]\nexample: gatehouse policy init policy/"},
		{"policy alone prints its help", []string{"policy"}, 0, "Available Commands:", ""},
	})
}
