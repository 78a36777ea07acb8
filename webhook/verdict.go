package webhook

// operation is the admission operation being reviewed.
type operation string

// The operations the rules distinguish.
const (
	create operation = "CREATE"
	Update operation = "UPDATE"
	Delete operation = "DELETE"
)

// Verdict is a rule's answer: allowed or not, why, and warnings the user
// sees either way (kubectl prints them as "Warning: ...").
type Verdict struct {
	Allowed  bool
	Reason   string
	Warnings []string
}

func allow(warnings ...string) Verdict { return Verdict{Allowed: true, Warnings: warnings} }

func deny(reason string, warnings ...string) Verdict {
	return Verdict{Allowed: false, Reason: reason, Warnings: warnings}
}
