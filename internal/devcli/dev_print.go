package devcli

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/demo"
)

// printServing tells a person what runs and how to call it: a token per
// identity the tour uses, and the tour's calls as curl commands.
func printServing(w io.Writer, o *Options, world *demo.World, stack *devStack, d *demoServers) error {
	label := dirLabel(o.Dir)
	fmt.Fprintf(w, "Gatehouse is serving %s: the proxy on %s, the controller and one agent (gRPC over TLS), ", label, stack.proxyURL)
	var backends []string
	for _, b := range world.Backends {
		backends = append(backends, fmt.Sprintf("%s (%s)", b.Name, b.Addr))
	}
	if len(backends) > 0 {
		fmt.Fprintf(w, "demo backends for %s, ", strings.Join(backends, ", "))
	}
	if d.issuer != nil {
		fmt.Fprintf(w, "the demo SSO issuer %s.\n", d.issuer.URL())
	} else {
		fmt.Fprintln(w, "no SSO issuer.")
	}
	vars := map[string]string{}
	var calls []*demo.Step
	if world.Tour != nil {
		for i := range world.Tour.Steps {
			if s := &world.Tour.Steps[i]; s.Call != nil {
				calls = append(calls, s)
			}
		}
	}
	if d.issuer != nil && len(calls) > 0 {
		until := time.Now().Add(time.Hour).Format("15:04")
		fmt.Fprintf(w, "\nTokens of the demo issuer, valid until %s:\n\n", until)
		for _, s := range calls {
			key := identityKey(s.Call)
			if _, ok := vars[key]; ok {
				continue
			}
			name := "TOKEN"
			if len(vars) > 0 {
				name = fmt.Sprintf("TOKEN%d", len(vars)+1)
			}
			tok, err := d.mint(s.Call.User, s.Call.Groups)
			if err != nil {
				return err
			}
			vars[key] = name
			fmt.Fprintf(w, "  # %s\n  %s=%s\n", who(s.Call), name, tok)
		}
		fmt.Fprintln(w, "\nThe tour's calls:")
		for _, c := range tourCurls(calls, stack.proxyURL, label, vars) {
			fmt.Fprintf(w, "\n  # %s\n  %s\n", strings.Join(c.notes, "; "), c.line)
		}
	}
	if d.issuer != nil {
		fmt.Fprintf(w, "\nMore tokens: %s\n", moreTokensCommand(o))
	}
	fmt.Fprintf(w, "Edit any file under %s: it takes effect within a second, and the log says which version the controller built,\n", label)
	fmt.Fprintln(w, "the agent acknowledged (\"snapshot applied\") and the proxy serves. Ctrl-C stops everything.")
	return nil
}

type curlLine struct {
	line  string
	notes []string
}

// tourCurls are the tour's calls as curl commands, each once, with what the
// tour says of it; a call the tour repeats after an edit says so.
func tourCurls(calls []*demo.Step, base, label string, vars map[string]string) []*curlLine {
	var out []*curlLine
	byLine := map[string]*curlLine{}
	for _, s := range calls {
		line := curlCommand(s.Call, base, vars[identityKey(s.Call)])
		note := s.Title
		if s.Edit != nil {
			note = fmt.Sprintf("%d once %s%s says %s, as the tour made it", s.Expect.Status, label, s.Edit.File, s.Edit.With)
		}
		if c, ok := byLine[line]; ok {
			c.notes = append(c.notes, note)
			continue
		}
		if s.Edit != nil {
			note = s.Title + "; " + note
		}
		c := &curlLine{line: line, notes: []string{note}}
		byLine[line] = c
		out = append(out, c)
	}
	return out
}

func identityKey(c *demo.Call) string { return c.User + "\x00" + strings.Join(c.Groups, ",") }

func who(c *demo.Call) string {
	if len(c.Groups) == 0 {
		return c.User
	}
	return fmt.Sprintf("%s, groups %s", c.User, strings.Join(c.Groups, ","))
}

// moreTokensCommand is the gatehouse dev token command for another
// identity, with every flag of this run a token depends on: the directory
// (its issuer, audience and groups claim), the namespace its objects are
// read in, and the issuer's key. A token minted with another key gets 401.
func moreTokensCommand(o *Options) string {
	cmd := os.Args[0] + " dev token --user bob --groups qa" + dirFlag(o.Dir)
	if o.IssuerKey != demo.DefaultKeyFile() {
		cmd += " --issuer-key " + shellQuote(o.IssuerKey)
	}
	if o.Namespace != settings.DefaultNamespace {
		cmd += " --control-plane-namespace " + shellQuote(o.Namespace)
	}
	return cmd
}

func dirFlag(dir string) string {
	if dirLabel(dir) == "examples/" {
		return ""
	}
	return " --dir " + shellQuote(dir)
}

// curlCommand is the call as a person would type it.
func curlCommand(c *demo.Call, base, tokenVar string) string {
	parts := []string{"curl -sS"}
	if c.Method != "" && c.Method != http.MethodGet {
		parts = append(parts, "-X "+c.Method)
	}
	parts = append(parts, `-H "Authorization: Bearer $`+tokenVar+`"`)
	if c.Application != "" {
		parts = append(parts, "-H "+shellQuote("Argocd-Application-Name: "+c.Application))
	}
	if c.Project != "" {
		parts = append(parts, "-H "+shellQuote("Argocd-Project-Name: "+c.Project))
	}
	parts = append(parts, shellQuote(strings.TrimSuffix(base, "/")+c.Path))
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
