package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command of gatehouse, the ones added later too, answers an
// argument it does not take, or a flag it does not have, with exit status
// 2, the argument or flag named, its usage line and an example (each
// command has one), never cobra's bare "unknown command" or "accepts 1
// arg(s)".
func TestEveryCommandRefusesAnExtraArgumentWithAnExample(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		path := strings.Fields(c.CommandPath())[1:]
		for _, tail := range [][]string{{"a1", "a2", "a3", "zz-extra"}, {"--zz-no-such-flag"}} {
			args := append(append([]string{}, path...), tail...)
			var out, errb bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
			msg := errb.String()
			if code != 2 || out.Len() > 0 || !strings.Contains(msg, "usage: "+c.CommandPath()) || !strings.Contains(msg, "\nexample: ") ||
				!strings.Contains(msg, `unexpected argument "`) && !strings.Contains(msg, `unknown command "`) && !strings.Contains(msg, "unknown flag: --zz-no-such-flag") {
				t.Errorf("gatehouse %s: exit %d, stdout %q, stderr %q; want 2, the argument or flag named, usage and example", strings.Join(args, " "), code, out.String(), msg)
			}
		}
	}
	walk(newRootCommand(nil, nil))
}

// The completion command is shown, and each shell's script is written.
func TestCompletionWritesAScriptPerShell(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "# bash completion V2 for gatehouse",
		"zsh":        "#compdef gatehouse",
		"fish":       "# fish completion for gatehouse",
		"powershell": "# powershell completion for gatehouse",
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"completion", shell}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), want) {
			t.Errorf("completion %s: exit %d, stderr %q, script starts %.80q; want %q", shell, code, errb.String(), out.String(), want)
		}
	}
	var help bytes.Buffer
	run(context.Background(), []string{"--help"}, nil, &help, &help)
	if !strings.Contains(help.String(), "completion ") {
		t.Errorf("gatehouse --help does not list completion:\n%s", help.String())
	}
}

// A DIR argument completes directories only, a FILE any file, and a
// command with no argument nothing (cobra's directive codes: 16 filter
// directories, 4 no file completion, 0 default).
func TestCompletionOfArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "test", ""}, ":16\n"},
		{[]string{"snapshot", ""}, ":16\n"},
		{[]string{"snapshot", "a/", ""}, ":4\n"},
		{[]string{"policy", "push", ""}, ":0\n"},
		{[]string{"policy", "push", "b.tar.gz", ""}, ":4\n"},
		{[]string{"policy", "eval", "--policy", ""}, ":16\n"},
		{[]string{"admit", ""}, ":4\n"},
		{[]string{"policy", "t"}, "test\t"},
	} {
		var out, errb bytes.Buffer
		run(context.Background(), append([]string{"__complete"}, tt.args...), nil, &out, &errb)
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("complete %q: %q, want %q", tt.args, out.String(), tt.want)
		}
	}
}
