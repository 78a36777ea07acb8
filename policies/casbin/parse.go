package casbin

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// policyLine is a p line: subject, resource, action, object, effect.
type policyLine struct {
	Line
	sub, res, act, obj, eft string
	builtin                 bool
}

// groupLine is a g line: member holds role.
type groupLine struct {
	Line
	member, role string
	builtin      bool
}

// parsed is a policy read line by line, as Argo CD's adapter reads it
// (util/rbac loadPolicyLine).
type parsed struct {
	ps []policyLine
	gs []groupLine
}

// parsePolicy reads the built-in policy (unless left out), then policy.csv.
// Lines that make Argo CD refuse the whole policy go to the report.
func parsePolicy(r io.Reader, opts Options, rep *report) (*parsed, error) {
	p := &parsed{}
	if !opts.NoBuiltin {
		if err := p.read(strings.NewReader(BuiltinPolicy), true, rep); err != nil {
			return nil, err
		}
	}
	if err := p.read(r, false, rep); err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	// Argo CD joins the keys with line breaks, and reads every line alone:
	// reading each key apart is the same, and the report can name it.
	for _, f := range opts.Extra {
		if err := p.scan(strings.NewReader(f.Text), f.Name, false, rep); err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name, err)
		}
	}
	return p, nil
}

func (p *parsed) read(r io.Reader, builtin bool, rep *report) error {
	return p.scan(r, "", builtin, rep)
}

func (p *parsed) scan(r io.Reader, source string, builtin bool, rep *report) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		p.line(Line{Number: n, Source: source, Text: text}, builtin, rep)
	}
	return sc.Err()
}

// line sorts one line the way Argo CD's adapter does: the first field names
// the casbin model section ("p", "g"; "r", "e" and "m" are loaded where they
// change nothing), anything else refuses the policy.
func (p *parsed) line(l Line, builtin bool, rep *report) {
	cr := csv.NewReader(strings.NewReader(l.Text))
	cr.TrimLeadingSpace = true
	tokens, err := cr.Read()
	if err != nil {
		rep.refused(l, builtin, "not a CSV line: %v", err)
		return
	}
	switch kind := tokens[0]; {
	case kind == "p" && len(tokens) == 6:
		p.ps = append(p.ps, policyLine{Line: l, sub: tokens[1], res: tokens[2], act: tokens[3], obj: tokens[4], eft: tokens[5], builtin: builtin})
	case kind == "g" && len(tokens) == 3:
		p.gs = append(p.gs, groupLine{Line: l, member: tokens[1], role: tokens[2], builtin: builtin})
	case kind == "p" || kind == "g":
		want := map[string]int{"p": 6, "g": 3}[kind]
		rep.refused(l, builtin, "a %s line has %d fields, want %d", kind, len(tokens), want)
	case kind == "r" || kind == "e" || kind == "m":
		rep.ignored(l, builtin, "Argo CD loads a %q line into casbin's model definition, where it changes no decision", kind)
	case kind == "":
		rep.refused(l, builtin, "the line type (first field) is empty: want p or g")
	default:
		rep.refused(l, builtin, "unknown line type %q: want p or g", kind)
	}
}
