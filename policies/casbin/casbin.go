// Package casbin converts Argo CD RBAC policy (the casbin CSV of
// argocd-rbac-cm's policy.csv) into the default extension policy's data
// (data.gatehouse): `gatehouse policy import-casbin policy.csv`.
//
// Extension access in Argo CD needs two permissions: "applications, get" on
// the Application and "extensions, invoke" on the extension. The importer
// turns the lines that grant or deny those into roles with applications and
// extensions grants, and the g lines (and policy.default) into bindings, so
// that the default policy gives the answers Argo CD would. Every other line is
// listed with the reason it was left out; none is dropped silently.
package casbin

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gobwas/glob"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// BuiltinPolicy is Argo CD's assets/builtin-policy.csv, which Argo CD always
// loads before policy.csv. Only its applications and extensions lines matter
// here; the rest is listed for reference.
const BuiltinPolicy = `p, role:readonly, applications, get, */*, allow
p, role:readonly, applicationsets, get, */*, allow
p, role:readonly, certificates, get, *, allow
p, role:readonly, clusters, get, *, allow
p, role:readonly, repositories, get, *, allow
p, role:readonly, write-repositories, get, *, allow
p, role:readonly, projects, get, *, allow
p, role:readonly, accounts, get, *, allow
p, role:readonly, gpgkeys, get, *, allow
p, role:readonly, logs, get, */*, allow
p, role:admin, applications, create, */*, allow
p, role:admin, applications, update, */*, allow
p, role:admin, applications, update/*, */*, allow
p, role:admin, applications, delete, */*, allow
p, role:admin, applications, delete/*, */*, allow
p, role:admin, applications, sync, */*, allow
p, role:admin, applications, rollback, */*, allow
p, role:admin, applications, override, */*, allow
p, role:admin, applications, action/*, */*, allow
p, role:admin, applicationsets, get, */*, allow
p, role:admin, applicationsets, create, */*, allow
p, role:admin, applicationsets, update, */*, allow
p, role:admin, applicationsets, delete, */*, allow
p, role:admin, certificates, create, *, allow
p, role:admin, certificates, update, *, allow
p, role:admin, certificates, delete, *, allow
p, role:admin, clusters, create, *, allow
p, role:admin, clusters, update, *, allow
p, role:admin, clusters, delete, *, allow
p, role:admin, repositories, create, *, allow
p, role:admin, repositories, update, *, allow
p, role:admin, repositories, delete, *, allow
p, role:admin, write-repositories, create, *, allow
p, role:admin, write-repositories, update, *, allow
p, role:admin, write-repositories, delete, *, allow
p, role:admin, projects, create, *, allow
p, role:admin, projects, update, *, allow
p, role:admin, projects, delete, *, allow
p, role:admin, accounts, update, *, allow
p, role:admin, gpgkeys, create, *, allow
p, role:admin, gpgkeys, delete, *, allow
p, role:admin, exec, create, */*, allow
g, role:admin, role:readonly
g, admin, role:admin
`

// Options are the settings from argocd-rbac-cm and argocd-cmd-params-cm that
// change what policy.csv means.
type Options struct {
	// DefaultRole is policy.default ("" for none).
	DefaultRole string
	// MatchMode is policy.matchMode: "" or "glob". "regex" is refused: the
	// default policy matches globs.
	MatchMode string
	// ControlPlaneNamespace is Argo CD's namespace (default "argocd").
	ControlPlaneNamespace string
	// NoBuiltin leaves out Argo CD's built-in roles (role:readonly, role:admin).
	NoBuiltin bool
}

// Line is one line of the input.
type Line struct {
	Number int    `json:"line"`
	Text   string `json:"text"`
}

// Skipped is a line left out, and why.
type Skipped struct {
	Line
	Reason string `json:"reason"`
}

// Result is the converted policy.
type Result struct {
	// Data is data.gatehouse for the default policy.
	Data policies.Data
	// Unconverted lines could matter to extension access but cannot be
	// converted (malformed, or a pattern that never matches in Argo CD).
	Unconverted []Skipped
	// Ignored lines do not concern extension access.
	Ignored []Skipped
	// Notes explain choices a reviewer should know about.
	Notes []string
}

type policyLine struct {
	Line
	sub, res, act, obj, eft string
	builtin                 bool
}

// Import converts policy.csv read from r.
func Import(r io.Reader, opts Options) (*Result, error) {
	switch opts.MatchMode {
	case "", "glob":
	case "regex":
		return nil, fmt.Errorf("policy.matchMode regex is not supported: the default policy matches globs; rewrite the patterns as globs")
	default:
		return nil, fmt.Errorf("policy.matchMode %q: want glob or regex", opts.MatchMode)
	}
	res := &Result{}
	var ps []policyLine
	edges := map[string][]string{} // g: subject -> roles it inherits
	read := func(r io.Reader, builtin bool) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		n := 0
		for sc.Scan() {
			n++
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			line := Line{Number: n, Text: text}
			skip := func(list *[]Skipped, format string, args ...any) {
				if !builtin {
					*list = append(*list, Skipped{Line: line, Reason: fmt.Sprintf(format, args...)})
				}
			}
			cr := csv.NewReader(strings.NewReader(text))
			cr.TrimLeadingSpace = true
			tokens, err := cr.Read()
			if err != nil {
				skip(&res.Unconverted, "not a CSV line: %v (Argo CD refuses the whole policy)", err)
				continue
			}
			switch {
			case tokens[0] == "g" && len(tokens) == 3:
				edges[tokens[1]] = append(edges[tokens[1]], tokens[2])
			case tokens[0] == "p" && len(tokens) == 6:
				ps = append(ps, policyLine{Line: line, sub: tokens[1], res: tokens[2], act: tokens[3], obj: tokens[4], eft: tokens[5], builtin: builtin})
			case tokens[0] == "g" || tokens[0] == "p":
				skip(&res.Unconverted, "a %s line has %d fields, want %d (Argo CD refuses the whole policy)", tokens[0], len(tokens), map[string]int{"g": 3, "p": 6}[tokens[0]])
			default:
				skip(&res.Unconverted, "unknown line type %q: want p or g (Argo CD refuses the whole policy)", tokens[0])
			}
		}
		return sc.Err()
	}
	if !opts.NoBuiltin {
		if err := read(strings.NewReader(BuiltinPolicy), true); err != nil {
			return nil, err
		}
	}
	if err := read(r, false); err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}

	roles := map[string]*policies.Role{}
	role := func(name string) *policies.Role {
		if roles[name] == nil {
			roles[name] = &policies.Role{}
		}
		return roles[name]
	}
	for _, p := range ps {
		skip := func(list *[]Skipped, format string, args ...any) {
			if !p.builtin {
				*list = append(*list, Skipped{Line: p.Line, Reason: fmt.Sprintf(format, args...)})
			}
		}
		if p.eft != policies.EffectAllow && p.eft != policies.EffectDeny {
			skip(&res.Unconverted, "effect %q is neither allow nor deny: Argo CD never applies this line", p.eft)
			continue
		}
		bad := ""
		for _, pat := range []string{p.res, p.act, p.obj} {
			if _, err := glob.Compile(pat); err != nil {
				bad = pat
				break
			}
		}
		if bad != "" {
			skip(&res.Unconverted, "%q is not a valid glob: Argo CD never matches this line", bad)
			continue
		}
		appGet := match(p.res, "applications") && match(p.act, "get")
		extInvoke := match(p.res, "extensions") && match(p.act, "invoke")
		if !appGet && !extInvoke {
			skip(&res.Ignored, "resource %q, action %q: extension access needs only applications/get and extensions/invoke", p.res, p.act)
			continue
		}
		if appGet {
			g := policies.ApplicationGrant{Object: p.obj}
			if p.obj == "*" || p.obj == "*/*" { // every RBAC object has a "/"
				g.Object = ""
			}
			if p.eft == policies.EffectDeny {
				g.Effect = policies.EffectDeny
			}
			role(p.sub).Applications = append(role(p.sub).Applications, g)
		}
		if extInvoke {
			g := policies.ExtensionGrant{Extension: p.obj}
			if p.obj == "*" {
				g.Extension = ""
			}
			if p.eft == policies.EffectDeny {
				g.Effect = policies.EffectDeny
			}
			role(p.sub).Extensions = append(role(p.sub).Extensions, g)
		}
	}

	// Bindings. Casbin does not tell users from groups: Argo CD checks the
	// user's subject, then each group that appears on the left of a g line,
	// each against every role reachable through g lines (and the subject's
	// own p lines). So a name becomes a user binding if it has p lines or g
	// lines, and a group binding if it has g lines.
	closure := func(name string) []string {
		seen := map[string]bool{name: true}
		queue := []string{name}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, next := range edges[n] {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
		var out []string
		for n := range seen {
			if roles[n] != nil {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	data := policies.Data{Roles: map[string]policies.Role{}}
	for name, r := range roles {
		data.Roles[name] = *r
	}
	data.Bindings.Users = map[string][]string{}
	data.Bindings.Groups = map[string][]string{}
	skippedRoleNames := false
	bind := func(m map[string][]string, name string) {
		if strings.HasPrefix(name, "role:") {
			skippedRoleNames = true
			return
		}
		if c := closure(name); len(c) > 0 {
			m[name] = c
		}
	}
	for name := range edges {
		bind(data.Bindings.Users, name)
		bind(data.Bindings.Groups, name)
	}
	for name := range roles {
		if _, ok := edges[name]; !ok {
			bind(data.Bindings.Users, name)
		}
	}
	if opts.DefaultRole != "" {
		data.Config.DefaultRoles = closure(opts.DefaultRole)
	}
	data.Config.ControlPlaneNamespace = opts.ControlPlaneNamespace
	if data.Config.ControlPlaneNamespace == "" {
		data.Config.ControlPlaneNamespace = "argocd"
	}
	yes := true
	data.Config.RequireApplicationGet = &yes
	data.Config.DenyScope = policies.DenyScopeSubject
	res.Data = data
	for _, list := range [][]Skipped{res.Unconverted, res.Ignored} {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Number < list[j].Number })
	}

	res.Notes = append(res.Notes,
		`denyScope is "subject", as Argo CD judges the user, each group and policy.default apart: a deny in one group's roles does not take away what another grants. Set it to "all" to make any deny win.`,
		"Casbin does not tell users from groups, so every name on the left of a g line is bound both as a user (by id) and as a group; remove the binding that does not apply.",
		"Argo CD's extension proxy checks \"applications, get\" on <project>/<application> whatever the Application's namespace; Gatehouse checks <project>/<namespace>/<application> for Applications outside "+data.Config.ControlPlaneNamespace+", as the rest of Argo CD's API does.",
	)
	if skippedRoleNames {
		res.Notes = append(res.Notes, `Names starting with "role:" are not bound as users or groups, though casbin would let a user or group of that name hold the role.`)
	}
	if _, err := policies.ValidateData(map[string]any{policies.DataKey: mustMap(data)}); err != nil {
		return nil, fmt.Errorf("converted data does not validate: %w", err)
	}
	return res, nil
}

func mustMap(d policies.Data) map[string]any {
	m, err := d.Map()
	if err != nil {
		panic(err)
	}
	return m
}

// match is Argo CD's globMatch: a gobwas glob without separators.
func match(pattern, value string) bool {
	g, err := glob.Compile(pattern)
	return err == nil && g.Match(value)
}

// JSON returns the converted data as a data.json document, {"gatehouse": …}.
func (r *Result) JSON() ([]byte, error) {
	out, err := json.MarshalIndent(map[string]any{policies.DataKey: r.Data}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// WriteReport lists the lines left out, and the notes.
func (r *Result) WriteReport(w io.Writer) error {
	var b strings.Builder
	section := func(title string, list []Skipped) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		for _, s := range list {
			fmt.Fprintf(&b, "  line %d: %s\n    %s\n", s.Number, s.Text, s.Reason)
		}
	}
	section("Not converted", r.Unconverted)
	section("Not about extension access", r.Ignored)
	if len(r.Notes) > 0 {
		b.WriteString("Notes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
