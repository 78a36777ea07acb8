package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag takes the first `quoted` word of a flag's usage as the name of its
// value in --help: a quoted phrase becomes a garbled placeholder
// ("--out gatehouse controller --snapshot-dir"). Every flag of every command
// names its value with one word, or none.
func TestEveryFlagsHelpNamesItsValueWithOneWord(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name, usage := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " -") {
				t.Errorf("%s --%s: --help shows the value as %q (usage %q): quote only a one-word placeholder", c.CommandPath(), f.Name, name, usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand(io.Discard, io.Discard))
}

func TestSnapshotHelpShowsOut(t *testing.T) {
	var out strings.Builder
	root := newRootCommand(&out, io.Discard)
	root.SetArgs([]string{"snapshot", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "--out DIR ") || !strings.Contains(out.String(), "write the snapshot's files under DIR, which must not exist; gatehouse controller --snapshot-dir serves it as is") {
		t.Fatalf("snapshot --help:\n%s", out.String())
	}
}
