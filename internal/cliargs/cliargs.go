package cliargs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Kind is what an argument names, for shell completion.
type Kind int

const (
	// Other is completed with nothing (a URL, a name).
	Other Kind = iota
	// File is completed with file names.
	File
	// Dir is completed with directory names only.
	Dir
)

// Arg is one positional argument: its name as the Use line shows it, and
// what it is, in a few words a person reads in the error.
type Arg struct {
	Name string
	What string
	Kind Kind
}

// Exact makes cmd take exactly args, in order: the Args validator and the
// shell completion of each.
func Exact(cmd *cobra.Command, args ...Arg) {
	set(cmd, len(args), args)
}

// Optional makes cmd take args, each of which may be left out from the
// end.
func Optional(cmd *cobra.Command, args ...Arg) {
	set(cmd, 0, args)
}

func set(cmd *cobra.Command, required int, want []Arg) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < required:
			a := want[len(args)]
			return Usage(cmd, fmt.Sprintf("missing argument %s (%s)", a.Name, a.What))
		case len(args) > len(want):
			return Usage(cmd, fmt.Sprintf("unexpected argument %q: %s takes %s", args[len(want)], cmd.Name(), describe(want, required)))
		}
		return nil
	}
	cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(want) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		switch want[len(args)].Kind {
		case Dir:
			return nil, cobra.ShellCompDirectiveFilterDirs
		case File:
			return nil, cobra.ShellCompDirectiveDefault
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// None makes cmd take no argument: what it works on comes from its flags,
// which hint names. With flag set (admit's -f), an argument is answered
// with the command line that gives it with that flag instead.
func None(cmd *cobra.Command, hint, flag string) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if cmd.HasAvailableSubCommands() {
			return unknownSubcommand(cmd, args[0])
		}
		msg := fmt.Sprintf("unexpected argument %q: %s takes no arguments; %s", args[0], cmd.Name(), hint)
		if flag != "" {
			msg += "\ndid you mean: " + cmd.CommandPath() + " " + flag + " " + strings.Join(args, " "+flag+" ")
		}
		return Usage(cmd, msg)
	}
	cmd.ValidArgsFunction = cobra.NoFileCompletions
}

// Group makes cmd a group of subcommands: alone it prints its help, and a
// word that is not one of its subcommands is refused with the list of
// them.
func Group(cmd *cobra.Command) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return unknownSubcommand(cmd, args[0])
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[groupAnnotation] = "true"
}

// groupAnnotation marks a command Group made: its usage is its commands'.
const groupAnnotation = "gatehouse.io/cliargs-group"

func unknownSubcommand(cmd *cobra.Command, word string) error {
	var subs []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			subs = append(subs, c.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q for %s; its commands are %s", word, cmd.CommandPath(), strings.Join(subs, ", "))
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		msg += "\ndid you mean: " + cmd.CommandPath() + " " + s[0]
	}
	return Usage(cmd, msg)
}

// Usage is a usage error of cmd: msg, then cmd's usage line and the first
// command line of its Example (with the lines a trailing backslash
// continues). It ends the process with exit status 2, as every usage error
// does.
func Usage(cmd *cobra.Command, msg string) error {
	var b strings.Builder
	if n := name(cmd); n != "" {
		b.WriteString(n + ": ")
	}
	b.WriteString(msg)
	if cmd.Annotations[groupAnnotation] != "" {
		b.WriteString("\nusage: " + cmd.CommandPath() + " COMMAND [flags]")
	} else {
		b.WriteString("\nusage: " + cmd.UseLine())
	}
	if ex := firstExample(cmd.Example); ex != "" {
		b.WriteString("\nexample: " + ex)
	}
	b.WriteString("\n(" + cmd.CommandPath() + " --help for more)")
	return errors.New(b.String())
}

// name is cmd's path below the binary's name: "policy test", or "" for
// the binary itself.
func name(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

func describe(want []Arg, required int) string {
	names := make([]string, len(want))
	for i, a := range want {
		names[i] = fmt.Sprintf("%s (%s)", a.Name, a.What)
	}
	switch {
	case len(want) == 1 && required == 1:
		return "one argument, " + names[0]
	case len(want) == 1:
		return "at most one argument, " + names[0]
	case required == len(want):
		return fmt.Sprintf("%d arguments: %s", len(want), strings.Join(names, ", "))
	default:
		return fmt.Sprintf("at most %d arguments: %s", len(want), strings.Join(names, ", "))
	}
}

// firstExample is the first command line of an Example: its first line and
// the lines its trailing backslashes continue.
func firstExample(example string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(example), "\n") {
		lines = append(lines, strings.TrimSpace(l))
		if !strings.HasSuffix(l, "\\") {
			break
		}
	}
	return strings.Join(lines, "\n    ")
}

// FlagErrors makes cmd, and the commands below it that set none of their
// own, answer a flag that does not parse or does not exist as an argument
// error is answered: the fault, the usage line and an example.
func FlagErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return Usage(cmd, err.Error())
	})
}
