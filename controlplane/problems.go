package controlplane

import (
	"cmp"
	"slices"
	"strings"
)

// Problem is something wrong in the cluster's configuration that a person
// must fix. The snapshot is still built: the part at fault is left out or
// kept at its last good value, and the problem is reported (log, Event on
// the object, metric).
type Problem struct {
	// Kind and Name identify the object in the control-plane namespace the
	// problem is about ("ConfigMap", "argocd-cm").
	Kind, Name string
	// Reason is a CamelCase word for Events and metrics.
	Reason string
	// Message says what is wrong and what to do; it never holds secrets.
	Message string
	// Warning: reported, but nothing was left out.
	Warning bool
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name),
			strings.Compare(a.Reason, b.Reason), strings.Compare(a.Message, b.Message))
	})
}
