package configproblem

import (
	"cmp"
	"slices"
)

// Problem is something wrong in the configuration. The snapshot is still
// built: the part at fault is left out or kept at its last good value, and
// the problem is reported (log, Event on the object, metric, webhook
// warning or denial).
type Problem struct {
	// Kind and Name are the object at fault, in Argo CD's control-plane
	// namespace ("ConfigMap", "argocd-cm"): its Event goes there.
	Kind, Name string
	// Key is the key of the object's data at fault ("extension.config"),
	// "" when the problem is the whole object's or no key was recorded.
	Key string
	// Extension is the extension the problem is about, "" for none.
	Extension string
	// Warning: reported, but nothing was left out.
	Warning bool
	// Reason is a CamelCase word for Events and metrics (api/v1alpha1's
	// Reason*, or a PolicyBundle's Ready condition reason).
	Reason string
	// Err says what is wrong and what to do, never a secret; its text is
	// the Event's note word for word.
	Err error
}

// Error is Err's text.
func (p Problem) Error() string {
	if p.Err == nil {
		return ""
	}
	return p.Err.Error()
}

// Unwrap is Err, so errors.Is sees what the problem was made of.
func (p Problem) Unwrap() error { return p.Err }

// ID is a problem as compared across builds: the same fault found again is
// the same ID, though its Err is a new value.
type ID struct {
	Kind, Name, Key, Extension, Reason, Message string
	Warning                                     bool
}

// ID identifies p by value.
func (p Problem) ID() ID {
	return ID{Kind: p.Kind, Name: p.Name, Key: p.Key, Extension: p.Extension, Reason: p.Reason, Message: p.Error(), Warning: p.Warning}
}

// compare orders problems by object, then reason, then text: the order the
// control plane reports them in.
func compare(a, b Problem) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Error(), b.Error()))
}

// Sort puts ps in Compare's order.
func Sort(ps []Problem) { slices.SortFunc(ps, compare) }
