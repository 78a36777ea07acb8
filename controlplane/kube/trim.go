package kube

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
)

// TrimApplications wraps a transport so that Application list and watch
// responses reach client-go without each Application's status and
// managedFields. Argo CD rewrites an Application's status constantly, and
// the status (with managedFields) is most of its bytes; client-go reads
// every watch event three times over (to frame it, to find its kind, to
// decode it), so that decoding was nearly all of the controller's CPU
// under status churn. Nothing in Gatehouse reads either field: the cache's
// projection drops them anyway.
//
// The filter is conservative: anything it does not understand (another
// content type, JSON it cannot parse) passes through unchanged.
func TrimApplications(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport // what a client with no Transport uses
	}
	return trimTransport{next: rt}
}

type trimTransport struct{ next http.RoundTripper }

func (t trimTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !isApplicationCollection(req.URL.Path) ||
		resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	resp.Body = newTrimReader(resp.Body)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// isApplicationCollection matches .../argoproj.io/v1alpha1/applications and
// .../namespaces/<ns>/applications (lists and watches, not single GETs).
func isApplicationCollection(path string) bool {
	return strings.Contains(path, "/apis/argoproj.io/v1alpha1/") && strings.HasSuffix(path, "/applications")
}

// trimReader yields the body one top-level JSON value at a time, trimmed.
type trimReader struct {
	src  *bufio.Reader
	body io.Closer
	out  bytes.Buffer
	err  error
}

func newTrimReader(body io.ReadCloser) *trimReader {
	return &trimReader{src: bufio.NewReaderSize(body, 64<<10), body: body}
}

func (r *trimReader) Read(p []byte) (int, error) {
	for r.out.Len() == 0 && r.err == nil {
		var value []byte
		value, r.err = nextValue(r.src)
		if len(value) > 0 {
			r.out.Write(trimValue(value))
		}
	}
	if r.out.Len() > 0 {
		return r.out.Read(p)
	}
	return 0, r.err
}

func (r *trimReader) Close() error { return r.body.Close() }

// nextValue reads one top-level JSON value (with the whitespace before it)
// by tracking nesting and strings over the reader's buffered bytes; what is
// not an object or array is returned up to the next newline, unchanged.
func nextValue(r *bufio.Reader) ([]byte, error) {
	var out []byte
	var st valueState
	for {
		if r.Buffered() == 0 {
			if _, err := r.Peek(1); err != nil {
				return out, err
			}
		}
		chunk, _ := r.Peek(r.Buffered())
		n, done := st.scan(chunk)
		out = append(out, chunk[:n]...)
		if _, err := r.Discard(n); err != nil {
			return out, err
		}
		if done {
			return out, nil
		}
	}
}

// The bytes the scanners stop at, inside and outside strings; everything
// else is skipped by a table lookup (bytes.IndexAny rebuilt its set per
// call, which cost more than the scan on JSON this dense).
var stringStops, valueStops = stops(`"\\`), stops("\"{}[]\n")

func stops(chars string) (t [256]bool) {
	for i := range len(chars) {
		t[chars[i]] = true
	}
	return t
}

// valueState follows one JSON value across chunks.
type valueState struct {
	depth             int
	inString, escaped bool
}

// scan consumes b up to the end of the value; it reports how many bytes
// it took and whether the value ended. Between the bytes that matter
// (quotes, escapes, brackets) it only looks bytes up in a table.
func (st *valueState) scan(b []byte) (int, bool) {
	i := 0
	for i < len(b) {
		if st.inString {
			if st.escaped {
				st.escaped = false
				i++
				continue
			}
			for i < len(b) && !stringStops[b[i]] {
				i++
			}
			if i == len(b) {
				return len(b), false
			}
			if b[i] == '\\' {
				st.escaped = true
			} else {
				st.inString = false
			}
			i++
			continue
		}
		for i < len(b) && !valueStops[b[i]] {
			i++
		}
		if i == len(b) {
			return len(b), false
		}
		switch c := b[i]; {
		case c == '"':
			st.inString = true
		case c == '{' || c == '[':
			st.depth++
		case c == '}' || c == ']':
			st.depth--
			if st.depth <= 0 {
				return i + 1, true
			}
		case c == '\n' && st.depth == 0:
			return i + 1, true
		}
		i++
	}
	return len(b), false
}

// rule says what to drop below a JSON value: members by name (drop) and
// members or array elements to descend into.
type rule struct {
	drop     map[string]bool // objects and arrays only
	dropAny  map[string]bool // whatever the value
	keepOnly map[string]bool // when set, every other member is dropped
	members  map[string]*rule
	elements *rule
}

var (
	applicationRule = &rule{
		drop: map[string]bool{"status": true},
		members: map[string]*rule{"metadata": {
			drop: map[string]bool{"managedFields": true},
			// kubectl's copy of the whole object, in a string.
			members: map[string]*rule{"annotations": {dropAny: map[string]bool{"kubectl.kubernetes.io/last-applied-configuration": true}}},
		},
			// The fields of the spec Gatehouse reads (argocd/v1alpha1); add
			// one here before reading it from the cache.
			"spec": {keepOnly: map[string]bool{"project": true, "destination": true}},
		},
	}
	// A watch event ({"type", "object"}) or a list ({"items": [...]}).
	topRule = &rule{members: map[string]*rule{"object": applicationRule, "items": {elements: applicationRule}}}
)

// trimValue applies topRule to one JSON value; on anything unexpected it
// returns the value unchanged.
func trimValue(v []byte) []byte {
	s := &scanner{in: v}
	start := s.ws(0)
	if start >= len(v) || v[start] != '{' {
		return v
	}
	out := make([]byte, 0, len(v))
	out = append(out, v[:start]...)
	out, end, ok := s.rewrite(out, start, topRule)
	if !ok {
		return v
	}
	return append(out, v[end:]...)
}

type scanner struct{ in []byte }

func (s *scanner) ws(i int) int {
	for i < len(s.in) && (s.in[i] == ' ' || s.in[i] == '\t' || s.in[i] == '\n' || s.in[i] == '\r') {
		i++
	}
	return i
}

// rewrite copies the value at i to out, applying r; it returns the index
// after the value.
func (s *scanner) rewrite(out []byte, i int, r *rule) ([]byte, int, bool) {
	if r == nil || i >= len(s.in) {
		end, ok := s.skip(i)
		return append(out, s.in[i:end]...), end, ok
	}
	switch s.in[i] {
	case '{':
		return s.object(out, i, r)
	case '[':
		return s.array(out, i, r.elements)
	}
	end, ok := s.skip(i)
	return append(out, s.in[i:end]...), end, ok
}

func (s *scanner) object(out []byte, i int, r *rule) ([]byte, int, bool) {
	out = append(out, '{')
	i = s.ws(i + 1)
	first := true
	if i < len(s.in) && s.in[i] == '}' {
		return append(out, '}'), i + 1, true
	}
	for i < len(s.in) {
		keyEnd, ok := s.str(i)
		if !ok {
			return out, i, false
		}
		key := s.in[i+1 : keyEnd-1]
		colon := s.ws(keyEnd)
		if colon >= len(s.in) || s.in[colon] != ':' {
			return out, i, false
		}
		valStart := s.ws(colon + 1)
		var valEnd int
		// Only objects and arrays are dropped: an ERROR event's object is a
		// Status whose "status" is a string client-go needs.
		if r.dropAny[string(key)] || r.keepOnly != nil && !r.keepOnly[string(key)] ||
			r.drop[string(key)] && valStart < len(s.in) && (s.in[valStart] == '{' || s.in[valStart] == '[') {
			if valEnd, ok = s.skip(valStart); !ok {
				return out, i, false
			}
		} else {
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, s.in[i:keyEnd]...)
			out = append(out, ':')
			if out, valEnd, ok = s.rewrite(out, valStart, r.members[string(key)]); !ok {
				return out, i, false
			}
		}
		i = s.ws(valEnd)
		switch {
		case i < len(s.in) && s.in[i] == ',':
			i = s.ws(i + 1)
		case i < len(s.in) && s.in[i] == '}':
			return append(out, '}'), i + 1, true
		default:
			return out, i, false
		}
	}
	return out, i, false
}

func (s *scanner) array(out []byte, i int, r *rule) ([]byte, int, bool) {
	out = append(out, '[')
	i = s.ws(i + 1)
	if i < len(s.in) && s.in[i] == ']' {
		return append(out, ']'), i + 1, true
	}
	for first := true; i < len(s.in); first = false {
		if !first {
			out = append(out, ',')
		}
		var ok bool
		if out, i, ok = s.rewrite(out, i, r); !ok {
			return out, i, false
		}
		i = s.ws(i)
		switch {
		case i < len(s.in) && s.in[i] == ',':
			i = s.ws(i + 1)
		case i < len(s.in) && s.in[i] == ']':
			return append(out, ']'), i + 1, true
		default:
			return out, i, false
		}
	}
	return out, i, false
}

// str returns the index after the string starting at i.
func (s *scanner) str(i int) (int, bool) {
	if i >= len(s.in) || s.in[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(s.in); {
		for j < len(s.in) && !stringStops[s.in[j]] {
			j++
		}
		if j == len(s.in) {
			return i, false
		}
		if s.in[j] == '"' {
			return j + 1, true
		}
		j += 2 // an escape and the byte it escapes
	}
	return i, false
}

// skip returns the index after the value starting at i.
func (s *scanner) skip(i int) (int, bool) {
	if i >= len(s.in) {
		return i, false
	}
	switch s.in[i] {
	case '"':
		return s.str(i)
	case '{', '[':
		var st valueState
		n, done := st.scan(s.in[i:])
		return i + n, done
	default:
		j := i
		for j < len(s.in) && !strings.ContainsRune(",}] \t\r\n", rune(s.in[j])) {
			j++
		}
		return j, j > i
	}
}
