package casbin

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// Options are the settings from argocd-rbac-cm and argocd-cmd-params-cm that
// change what policy.csv means.
type Options struct {
	// DefaultRole is policy.default ("" for none).
	DefaultRole string
	// MatchMode is policy.matchMode: "" or "glob" (gobwas globs), or
	// "regex" (Go regular expressions, unanchored).
	MatchMode string
	// ControlPlaneNamespace is Argo CD's namespace (default "argocd").
	ControlPlaneNamespace string
	// Extra are the other policy.<name>.csv keys of argocd-rbac-cm, in the
	// order Argo CD appends them to policy.csv (see FromConfigMap).
	Extra []PolicyFile
	// Projects are the AppProjects of Argo CD's namespace, whose roles
	// Argo CD adds to the policy for checks on their Applications.
	Projects []Project
	// notes are FromConfigMap's, for the report.
	notes []string
	// NoBuiltin leaves out Argo CD's built-in roles (role:readonly,
	// role:admin), which Argo CD always loads.
	NoBuiltin bool
}

// Line is one line of the input: of policy.csv (by number), of another
// key of argocd-rbac-cm (Source is the key, and the number), or of an
// AppProject's roles (by Source).
type Line struct {
	Number int    `json:"line,omitempty"`
	Source string `json:"source,omitempty"`
	Text   string `json:"text"`
}

func (l Line) where() string {
	switch {
	case l.Source == "":
		return fmt.Sprintf("line %d", l.Number)
	case l.Number > 0:
		return fmt.Sprintf("%s, line %d", l.Source, l.Number)
	}
	return l.Source
}

// Skipped is a line, and what became of it.
type Skipped struct {
	Line
	Reason string `json:"reason"`
}

// Result is the converted policy.
type Result struct {
	// Data is data.gatehouse for the default policy.
	Data policies.Data
	// Refused lines make Argo CD refuse the whole policy: argocd-server
	// does not start with it, or, when it is edited in, every check fails.
	// The rest of the policy is still converted; see Partial.
	Refused []Skipped
	// Stricter lines are converted so that Gatehouse denies some requests
	// Argo CD allows (never the other way round).
	Stricter []Skipped
	// Unconverted lines concern extension access but have no effect on it
	// in Argo CD (they never match); nothing is lost by leaving them out.
	Unconverted []Skipped
	// Ignored lines do not concern extension access.
	Ignored []Skipped
	// Notes explain choices a reviewer should know about.
	Notes []string
}

// Partial reports whether Argo CD would refuse the policy (Refused is not
// empty), so that Data converts only the lines Argo CD could have loaded.
func (r *Result) Partial() bool { return len(r.Refused) > 0 }

// report collects what becomes of each line of policy.csv; the built-in
// policy's lines are not reported.
type report struct {
	refusedLines, stricter, unconverted, ignoredLines []Skipped
	notes                                             []string
}

func (r *report) add(list *[]Skipped, l Line, builtin bool, format string, args ...any) {
	if !builtin {
		*list = append(*list, Skipped{Line: l, Reason: fmt.Sprintf(format, args...)})
	}
}

func (r *report) refused(l Line, builtin bool, format string, args ...any) {
	r.add(&r.refusedLines, l, builtin, format, args...)
}

func (r *report) stricterThanArgoCD(l Line, builtin bool, format string, args ...any) {
	r.add(&r.stricter, l, builtin, format, args...)
}

func (r *report) notConverted(l Line, builtin bool, format string, args ...any) {
	r.add(&r.unconverted, l, builtin, format, args...)
}

func (r *report) ignored(l Line, builtin bool, format string, args ...any) {
	r.add(&r.ignoredLines, l, builtin, format, args...)
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// merge adds the lists of another report.
func (r *report) merge(o *report) {
	r.refusedLines = append(r.refusedLines, o.refusedLines...)
	r.stricter = append(r.stricter, o.stricter...)
	r.unconverted = append(r.unconverted, o.unconverted...)
	r.ignoredLines = append(r.ignoredLines, o.ignoredLines...)
	r.notes = append(r.notes, o.notes...)
}

// result sorts every list by line (policy.csv's first, then those of the
// other keys and AppProjects, by source); a line reported twice for one reason
// (a p line that grants both resources) is listed once.
func (r *report) result(data policies.Data) *Result {
	return &Result{
		Data:        data,
		Refused:     byLine(r.refusedLines),
		Stricter:    byLine(r.stricter),
		Unconverted: byLine(r.unconverted),
		Ignored:     byLine(r.ignoredLines),
		Notes:       r.notes,
	}
}

func byLine(list []Skipped) []Skipped {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Number < b.Number
	})
	out := list[:0]
	for i, s := range list {
		if i > 0 && s == list[i-1] {
			continue
		}
		out = append(out, s)
	}
	return out
}

// JSON returns the converted data as a data.json document, {"gatehouse": …}.
func (r *Result) JSON() ([]byte, error) {
	out, err := json.MarshalIndent(map[string]any{policies.DataKey: r.Data}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// WriteReport lists the lines Argo CD refuses, those Gatehouse is stricter
// about, those left out, and the notes.
func (r *Result) WriteReport(w io.Writer) error {
	var b strings.Builder
	section := func(title string, list []Skipped) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		for _, s := range list {
			fmt.Fprintf(&b, "  %s: %s\n    %s\n", s.where(), s.Text, s.Reason)
		}
	}
	section("Argo CD refuses the whole policy because of", r.Refused)
	section("Gatehouse denies more than Argo CD", r.Stricter)
	section("Not converted (no effect on extension access in Argo CD)", r.Unconverted)
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
