package demo

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// The tour lives in an examples directory as a ConfigMap, so that every file
// of the directory stays Kubernetes YAML that `kubectl apply -f` and
// `gatehouse admit -f` read like the rest; nothing in a cluster reads it.
const (
	TourConfigMap = "gatehouse-dev-tour"
	TourKey       = "tour.yaml"
)

// Tour is what `gatehouse dev` shows first, each step with what must come
// of it: the examples say what they demonstrate, so an edit that changes
// the outcome fails the tour instead of making it lie.
type Tour struct {
	Steps []Step `json:"steps"`
}

// Step is one thing the tour does: a call through the proxy, the admission
// verdicts of the directory, or an edit of a file followed by a call that
// shows it took effect.
type Step struct {
	Title string `json:"title"`
	// Call is a request through the proxy; Expect says how it must end.
	Call   *Call   `json:"call,omitempty"`
	Expect *Expect `json:"expect,omitempty"`
	// Admit lists the verdicts `gatehouse admit -f <dir>` must print, in
	// order, as its lines start: "ALLOW Application team-a/guestbook".
	Admit []string `json:"admit,omitempty"`
	// Edit changes a file of the directory (in a copy: the tour never
	// touches the directory it was given); every part must then serve a
	// new version, and Call must end as Expect says.
	Edit *Edit `json:"edit,omitempty"`
}

// Call is an extension request as Argo CD's UI sends it, with a token the
// demo issuer mints for User and Groups.
type Call struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	// Method defaults to GET.
	Method string `json:"method,omitempty"`
	// Path is the proxy's: /extensions/<name>/... (or /api/v1/extensions/...).
	Path string `json:"path"`
	// Application ("<namespace>:<name>") and Project are sent as
	// Argocd-Application-Name and Argocd-Project-Name.
	Application string `json:"application,omitempty"`
	Project     string `json:"project,omitempty"`
}

// Expect is how a call must end.
type Expect struct {
	Status int `json:"status"`
	// Reason, when set, is the reason the proxy must give (its JSON
	// answer's "reason").
	Reason string `json:"reason,omitempty"`
	// Backend, when set, is the demo backend that must answer (the name of
	// the cluster it serves).
	Backend string `json:"backend,omitempty"`
}

// Edit replaces text in one file of the directory.
type Edit struct {
	// File is relative to the directory.
	File string `json:"file"`
	// Replace must occur exactly once in the file; With replaces it.
	Replace string `json:"replace"`
	With    string `json:"with"`
}

// parseTour reads a tour (the tour.yaml key of the tour ConfigMap) and
// checks that every step is complete.
func parseTour(data []byte) (*Tour, error) {
	var t Tour
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("tour: %w", err)
	}
	if len(t.Steps) == 0 {
		return nil, errors.New("tour: no steps")
	}
	var errs []error
	for i := range t.Steps {
		if err := t.Steps[i].check(); err != nil {
			errs = append(errs, fmt.Errorf("tour: step %d (%s): %w", i+1, t.Steps[i].Title, err))
		}
	}
	return &t, errors.Join(errs...)
}

func (s *Step) check() error {
	var errs []error
	if s.Title == "" {
		errs = append(errs, errors.New("no title"))
	}
	kinds := 0
	for _, set := range []bool{s.Call != nil && s.Edit == nil, s.Admit != nil, s.Edit != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		errs = append(errs, errors.New("give one of call (with expect), admit, or edit (with call and expect)"))
	}
	if s.Admit != nil && (s.Call != nil || s.Expect != nil) {
		errs = append(errs, errors.New("admit takes no call or expect"))
	}
	if s.Edit != nil {
		switch {
		case s.Edit.File == "" || s.Edit.Replace == "":
			errs = append(errs, errors.New("edit needs file and replace"))
		case path.IsAbs(s.Edit.File) || strings.HasPrefix(path.Clean(s.Edit.File), ".."):
			errs = append(errs, fmt.Errorf("edit.file %q must be a path inside the directory", s.Edit.File))
		}
		if s.Call == nil {
			errs = append(errs, errors.New("edit needs a call that shows it took effect"))
		}
	}
	if c := s.Call; c != nil {
		if c.User == "" || !strings.HasPrefix(c.Path, "/") {
			errs = append(errs, errors.New("call needs user and a path starting with /"))
		}
		if s.Expect == nil || s.Expect.Status == 0 {
			errs = append(errs, errors.New("call needs expect.status"))
		}
	}
	return errors.Join(errs...)
}
