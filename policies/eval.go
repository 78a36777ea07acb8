package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"
)

// explanationRule is the rule `policy eval --explain` prints when a policy
// defines it (the default policy does): the roles, grants and checks behind
// the decision.
const explanationRule = "data.gatehouse.extensions.explanation"

// Explain modes for EvalOptions.Explain, as in `opa eval --explain`.
const (
	explainNone  = ""
	ExplainNotes = "notes" // the policy's trace() notes and the explanation
	ExplainFails = "fails" // plus every expression that failed
	ExplainFull  = "full"  // plus the whole OPA trace
)

// EvalOptions tune Eval.
type EvalOptions struct {
	Explain string
	// Capabilities the policy is compiled with (nil: the default capabilities).
	Capabilities *Capabilities
}

// EvalReport is what `gatehouse policy eval` prints.
type EvalReport struct {
	Decision Decision
	// Err is why the policy could not decide (the decision is then a
	// denial, as in the proxy): an evaluation error, or an
	// *evalTimeoutError.
	Err error
	// UsesDefaultPolicy: the policy directory had no policy module, so the
	// embedded default policy decided (Bundle.UsesDefaultPolicy).
	UsesDefaultPolicy bool
	// Explanation is the value of explanationRule, if the policy has it and
	// Explain was asked for.
	Explanation any
	// Trace is OPA's trace, filtered by the explain mode.
	Trace string
}

// EvalFile evaluates the policy bundle in policyDir for the input in the
// JSON file inputFile: `gatehouse policy eval --policy DIR --input FILE`.
func EvalFile(ctx context.Context, policyDir, inputFile string, opts EvalOptions) (*EvalReport, error) {
	b, err := LoadDir(policyDir, LoadOptions{})
	if err != nil {
		return nil, err
	}
	b.Capabilities = opts.Capabilities
	raw, err := os.ReadFile(inputFile)
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	in, err := decodeInput(raw)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", inputFile, err)
	}
	return eval(ctx, b, in, opts)
}

// decodeInput reads an Input from JSON; unknown fields are errors, so a
// misspelt field cannot silently change the answer.
func decodeInput(raw []byte) (Input, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in Input
	if err := dec.Decode(&in); err != nil {
		return Input{}, fmt.Errorf("decode: %s", jsonError(err))
	}
	return in, nil
}

// jsonError says what is wrong with a JSON input in the input's terms,
// not in Go's (encoding/json names Go types and fields).
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	want := "another type"
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		want = "a number"
	}
	if field := strings.TrimPrefix(te.Field, "Input."); field != "" && field != "Input" {
		return fmt.Sprintf("%s: want %s, got %s", field, want, te.Value)
	}
	return fmt.Sprintf("want %s, got %s", want, te.Value)
}

// eval decides one input with bundle b, as the proxy would (but uncached,
// with the engine's evaluation bound), and explains the decision when
// asked. An error of the evaluation is in the report, with the denial; the
// error returned means the policy or the options are unusable.
func eval(ctx context.Context, b Bundle, in Input, opts EvalOptions) (*EvalReport, error) {
	switch opts.Explain {
	case explainNone, ExplainNotes, ExplainFails, ExplainFull:
	default:
		return nil, fmt.Errorf("explain %q: use notes, fails or full", opts.Explain)
	}
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(ctx, b); err != nil {
		return nil, err
	}
	d, err := e.Decide(ctx, in)
	report := &EvalReport{Decision: d, Err: err, UsesDefaultPolicy: b.UsesDefaultPolicy}
	if err != nil || opts.Explain == explainNone {
		return report, nil
	}
	// Tracing costs several times the decision, which kept to the bound.
	ctx, cancel := context.WithTimeout(ctx, hardStopFactor*DefaultEvalTimeout)
	defer cancel()
	c := e.state.Load()
	in.normalize()
	tracer := topdown.NewBufferTracer()
	if _, err := c.query.Eval(ctx, rego.EvalParsedInput(c.input(&in)), rego.EvalQueryTracer(tracer)); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var events []*topdown.Event
	switch opts.Explain {
	case ExplainNotes:
		events = lineage.Notes(*tracer)
	case ExplainFails:
		events = lineage.Fails(*tracer)
	case ExplainFull:
		events = lineage.Full(*tracer)
	}
	var buf bytes.Buffer
	topdown.PrettyTraceWithLocation(&buf, events)
	report.Trace = buf.String()
	if len(c.compiler.GetRules(ast.MustParseRef(explanationRule))) > 0 {
		pq, err := rego.New(rego.Compiler(c.compiler), rego.Store(c.store), rego.Query(explanationRule)).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(c.input(&in)))
		if err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		if len(rs) > 0 && len(rs[0].Expressions) > 0 {
			report.Explanation = rs[0].Expressions[0].Value
		}
	}
	return report, nil
}

// Write prints the report for a person.
func (r *EvalReport) Write(w io.Writer) error {
	var b strings.Builder
	d := r.Decision
	verdict := "deny"
	if d.Allow {
		verdict = "allow"
	}
	if d.Shadow {
		verdict = "allow (shadow mode: the policy denies, but is not enforcing)"
	}
	fmt.Fprintf(&b, "decision: %s\nreason:   %s\n", verdict, d.Reason)
	if d.Conceal {
		b.WriteString("conceal:  the proxy answers with its generic 403 and does not show this reason\n")
	}
	if r.Err != nil {
		fmt.Fprintf(&b, "error:    %v\n", r.Err)
	}
	if d.Revision != "" {
		fmt.Fprintf(&b, "revision: %s\n", d.Revision)
	}
	if r.UsesDefaultPolicy {
		b.WriteString("policy:   the default policy (built in; the directory has no .rego policy of its own)\n")
	}
	if len(d.Headers) > 0 {
		b.WriteString("headers:\n")
		for _, k := range sortedKeys(d.Headers) {
			fmt.Fprintf(&b, "  %s: %s\n", k, d.Headers[k])
		}
	}
	if r.Explanation != nil {
		out, err := json.MarshalIndent(r.Explanation, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "explanation:\n  %s\n", out)
	}
	if r.Trace != "" {
		fmt.Fprintf(&b, "trace:\n%s", r.Trace)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
