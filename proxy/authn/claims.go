package authn

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// claims holds the registered claims Gatehouse checks plus the raw claim set,
// from which the configured username and groups claims are read.
type claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	HasAud    bool
	Expiry    time.Time // zero: no exp claim
	NotBefore time.Time // zero: no nbf claim
	IssuedAt  time.Time // zero: no iat claim
	ID        string
	raw       map[string]json.RawMessage
}

// claimSet is what golang-jwt decodes a payload into: each claim's JSON, read
// by readClaims with Argo CD's rules. Its jwt.Claims methods exist only to
// satisfy the interface; golang-jwt's own claim validation is off.
type claimSet map[string]json.RawMessage

// UnmarshalJSON takes a claim set apart as json.Unmarshal into a
// map[string]json.RawMessage does: the values stay raw, and a repeated name
// keeps its last value. encoding/json has validated data before it calls
// this, so splitObject may split the members itself, which halves the cost
// of the claims on a token's first verification (docs/performance.md); a
// name holding an escape or bytes that are not UTF-8 (which encoding/json
// would rewrite) sends the whole set to encoding/json, so the names are
// always what encoding/json makes of them. FuzzClaimSet holds it to that.
func (c *claimSet) UnmarshalJSON(data []byte) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(data) == 4 && string(data) == "null":
		*c = nil // refused by readClaims
		return nil
	case len(data) == 0 || data[0] != '{':
		return errNotObject
	}
	// The values keep pointing into data, which encoding/json may reuse.
	data = bytes.Clone(data)
	if raw, ok := splitObject(data); ok {
		*c = raw
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = raw
	return nil
}

func (*claimSet) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (*claimSet) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (*claimSet) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (*claimSet) GetIssuer() (string, error)                   { return "", nil }
func (*claimSet) GetSubject() (string, error)                  { return "", nil }
func (*claimSet) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

// splitObject splits a JSON object that json.Valid accepted into its
// members. It reports false for a member name it cannot take byte for byte.
func splitObject(data []byte) (map[string]json.RawMessage, bool) {
	raw := make(map[string]json.RawMessage, 8)
	i := skipSpace(data, 1)
	if data[i] == '}' {
		return raw, true
	}
	for {
		// data[i] is the opening quote of a member name.
		end := i + 1
		for data[end] != '"' {
			if data[end] == '\\' {
				return nil, false
			}
			end++
		}
		name := data[i+1 : end]
		if !utf8.Valid(name) {
			return nil, false
		}
		i = skipSpace(data, end+1) // at ':'
		i = skipSpace(data, i+1)
		vend := valueEnd(data, i)
		raw[string(name)] = data[i:vend:vend]
		i = skipSpace(data, vend) // at ',' or '}'
		if data[i] == '}' {
			return raw, true
		}
		i = skipSpace(data, i+1)
	}
}

// valueEnd returns the index just past the JSON value that starts at i in
// valid JSON.
func valueEnd(data []byte, i int) int {
	depth := 0
	for ; ; i++ {
		switch data[i] {
		case '"':
			i++
			for data[i] != '"' {
				if data[i] == '\\' {
					i++ // the escaped byte cannot end the string
				}
				i++
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 {
				// A number or literal runs to the next delimiter.
				for i < len(data) && strings.IndexByte(",}] \t\r\n", data[i]) < 0 {
					i++
				}
				return i
			}
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// strictUnmarshal decodes a JSON object. encoding/json would accept null (and
// leave the target empty) where an object is required; this refuses it.
func strictUnmarshal(data []byte, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errNotObject
	}
	return json.Unmarshal(data, v)
}

var errNotObject = errors.New("not a JSON object")

// parseClaims reads a claim set the way parse does.
func parseClaims(payload []byte, c *claims) error {
	var set claimSet
	if strictUnmarshal(payload, &set) != nil {
		return malformed("payload is not a JSON object")
	}
	return readClaims(set, c)
}

// readClaims reads the registered claims the way Argo CD does. The set was
// decoded by encoding/json, as golang-jwt and go-oidc decode it for Argo CD,
// so a repeated claim keeps its last value and names are case-sensitive.
// A registered claim of the wrong type refuses the token.
func readClaims(set claimSet, c *claims) error {
	if set == nil { // the payload was JSON null
		return malformed("payload is not a JSON object")
	}
	c.raw = set
	var err error
	if c.Issuer, err = stringClaim(c.raw, "iss"); err != nil {
		return err
	}
	if c.Subject, err = stringClaim(c.raw, "sub"); err != nil {
		return err
	}
	if c.ID, err = stringClaim(c.raw, "jti"); err != nil {
		return err
	}
	if c.Expiry, err = timeClaim(c.raw, "exp"); err != nil {
		return err
	}
	if c.NotBefore, err = timeClaim(c.raw, "nbf"); err != nil {
		return err
	}
	if c.IssuedAt, err = timeClaim(c.raw, "iat"); err != nil {
		return err
	}
	if aud, ok := c.raw["aud"]; ok && !isNull(aud) {
		c.HasAud = true
		if c.Audience, ok = audience(aud); !ok {
			return malformed("aud is neither a string nor a list of strings")
		}
	}
	return nil
}

// stringClaim reads an optional string claim; a present claim of another
// type is malformed rather than ignored, so "sub": 1 cannot pass as "".
func stringClaim(raw map[string]json.RawMessage, name string) (string, error) {
	v, ok := raw[name]
	if !ok || isNull(v) {
		return "", nil
	}
	if s, ok := plainString(v); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", malformed("%s is not a string", name)
	}
	return s, nil
}

// plainString is the fast path for a JSON string without escapes, which is
// every claim Argo CD and common issuers write: the bytes between the quotes
// are the value. It needs v to come from a document encoding/json already
// validated (as map values do) and leaves anything else, including invalid
// UTF-8 that encoding/json would replace, to json.Unmarshal.
func plainString(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// timeClaim reads a NumericDate (RFC 7519 §2): seconds since the epoch, a
// JSON number that may have a fraction. Absent gives the zero time.
func timeClaim(raw map[string]json.RawMessage, name string) (time.Time, error) {
	v, ok := raw[name]
	if !ok || isNull(v) {
		return time.Time{}, nil
	}
	v = bytes.TrimSpace(v)
	// A validated JSON number is also valid input for ParseFloat; anything
	// else (a string, an object) is not a NumericDate.
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return time.Time{}, malformed("%s is not a number of seconds", name)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return time.Time{}, malformed("%s is not a number of seconds", name)
	}
	// Refuse dates no real token carries (before 1970, after the year
	// 10000) so the conversion below cannot overflow or wrap around.
	if f < 0 || f > 253402300800 || math.IsNaN(f) {
		return time.Time{}, malformed("%s is out of range", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// audience reads aud, a string or a list of strings (RFC 7519 §4.1.3).
func audience(v json.RawMessage) ([]string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil, false
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, false
		}
		return []string{s}, true
	case '[':
		var l []string
		if err := json.Unmarshal(v, &l); err != nil {
			return nil, false
		}
		return l, true
	}
	return nil, false
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
