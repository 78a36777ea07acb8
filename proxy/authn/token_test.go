package authn

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

// TestParseClaims pins down how claim values are read, including the JSON
// spellings a hand-rolled reader could get wrong.
func TestParseClaims(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    claims // raw is not compared
		wantErr bool
	}{
		{
			name:    "Argo CD session claims",
			payload: `{"iss":"argocd","sub":"alice:login","iat":1772362800,"nbf":1772362800,"exp":1772445600,"jti":"j"}`,
			want: claims{Issuer: "argocd", Subject: "alice:login", ID: "j",
				IssuedAt: time.Unix(1772362800, 0).UTC(), NotBefore: time.Unix(1772362800, 0).UTC(), Expiry: time.Unix(1772445600, 0).UTC()},
		},
		{
			name:    "whitespace, escapes and exponents",
			payload: " {\n \"iss\" : \"argo\\u0063d\" , \"sub\":\"a\\\"b\", \"exp\" : 1.7724456e9 }\n",
			want:    claims{Issuer: "argocd", Subject: `a"b`, Expiry: time.Unix(1772445600, 0).UTC()},
		},
		{
			name:    "fractional seconds",
			payload: `{"exp":1772445600.5}`,
			want:    claims{Expiry: time.Unix(1772445600, 5e8).UTC()},
		},
		{
			name:    "null claims count as absent",
			payload: `{"iss":null,"exp":null,"aud":null}`,
			want:    claims{},
		},
		{
			name:    "audience as string and as list",
			payload: `{"aud":["argo-cd","argo-cd-cli"]}`,
			want:    claims{Audience: []string{"argo-cd", "argo-cd-cli"}, HasAud: true},
		},
		{
			name:    "empty audience list is an audience claim naming nobody",
			payload: `{"aud":[]}`,
			want:    claims{Audience: []string{}, HasAud: true},
		},
		{
			name:    "a repeated claim: the last one counts (RFC 7519 §4), as in encoding/json and Argo CD",
			payload: `{"iss":"evil","iss":"argocd"}`,
			want:    claims{Issuer: "argocd"},
		},
		{
			name:    "claim names are case-sensitive",
			payload: `{"ISS":"argocd","Exp":"soon"}`,
			want:    claims{},
		},
		{name: "exp as a string", payload: `{"exp":"1772445600"}`, wantErr: true},
		{name: "exp before 1970", payload: `{"exp":-1}`, wantErr: true},
		{name: "exp beyond the year 10000", payload: `{"exp":1e300}`, wantErr: true},
		{name: "iss as a number", payload: `{"iss":1}`, wantErr: true},
		{name: "jti as an object", payload: `{"jti":{}}`, wantErr: true},
		{name: "aud as a number", payload: `{"aud":1}`, wantErr: true},
		{name: "payload is a list", payload: `[1]`, wantErr: true},
		{name: "payload is null", payload: `null`, wantErr: true},
		{name: "trailing garbage", payload: `{"iss":"argocd"} x`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got claims
			err := parseClaims([]byte(tt.payload), &got)
			if tt.wantErr {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("error = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.raw = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseShape(t *testing.T) {
	valid := localToken(localClaims("alice:login"))
	hs256Only := newParser([]string{"HS256"})
	secret := func(*token) (any, error) { return testSecret, nil }
	tok, err := parse(valid, hs256Only, secret)
	if err != nil {
		t.Fatal(err)
	}
	if tok.alg != "HS256" || tok.claims.Subject != "alice:login" {
		t.Errorf("parsed %+v", tok)
	}
	other := func(*token) (any, error) { return []byte("another secret"), nil }
	if _, err := parse(valid, hs256Only, other); !errors.Is(err, errSignature) {
		t.Errorf("under another key: error = %v, want errSignature", err)
	}

	long := make([]byte, maxTokenBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	long[10], long[20] = '.', '.'
	if _, err := parse(string(long), hs256Only, secret); !errors.Is(err, errMalformed) {
		t.Errorf("a token over MaxTokenBytes: error = %v", err)
	}
	for _, s := range []string{"..", "a..", "..b", enc([]byte(`{"alg":""}`)) + "." + enc([]byte(`{}`)) + "."} {
		if _, err := parse(s, hs256Only, secret); !errors.Is(err, errMalformed) {
			t.Errorf("parse(%q): error = %v, want ErrMalformed", s, err)
		}
	}
}

// claimSetSeeds are claim sets, valid and not, that start the fuzzers off.
var claimSetSeeds = []string{
	`{"iss":"argocd","sub":"alice:login","iat":1772362800,"exp":1772445600,"jti":"j"}`,
	" {\n \"iss\" : \"argo\\u0063d\" , \"sub\":\"a\\\"b\", \"exp\" : 1.7724456e9 }\n",
	`{"iss":"evil","iss":"argocd"}`,
	`{"gr\u006fups":["a"],"groups":"b"}`,
	`{"aud":["x","y"],"federated_claims":{"user_id":"u","nested":[{"a":"}"},"]\\"]}}`,
	`{"a":true,"b":false,"c":null,"d":-0.5e-3,"e":[],"f":{}}`,
	"{\"\xff\":1}",
	`{}`, `[]`, `null`, `{"a":1} x`, `{"a":}`, `{"a":1,}`,
	"{}\f", // form feed: space to bytes.TrimSpace, not to JSON
}

// FuzzClaimSet holds claimSet, which splits a claim set itself, to what
// encoding/json makes of it as a map[string]json.RawMessage: the same
// refusals, the same names and the same raw values.
func FuzzClaimSet(f *testing.F) {
	for _, s := range claimSetSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got claimSet
		gotErr := json.Unmarshal(payload, &got)
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(payload, &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("claimSet error %v, encoding/json error %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if (got == nil) != (want == nil) || len(got) != len(want) {
			t.Fatalf("claimSet %d members (nil: %v), encoding/json %d (nil: %v)", len(got), got == nil, len(want), want == nil)
		}
		for name, w := range want {
			if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
				t.Fatalf("member %q: claimSet %q, encoding/json %q", name, g, w)
			}
		}
	})
}

// FuzzParseClaims holds parseClaims to a second reading of the claim set
// through encoding/json's generic values: a payload is refused exactly when
// it is not a JSON object or a registered claim has the wrong type or range,
// and otherwise every registered claim reads the same.
func FuzzParseClaims(f *testing.F) {
	for _, s := range claimSetSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got claims
		gotErr := parseClaims(payload, &got)
		want, wantOK := referenceClaims(payload)
		if (gotErr == nil) != wantOK {
			t.Fatalf("parseClaims error %v, reference accepts: %v", gotErr, wantOK)
		}
		if gotErr != nil {
			if !errors.Is(gotErr, errMalformed) {
				t.Fatalf("error %v is not ErrMalformed", gotErr)
			}
			return
		}
		got.raw = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseClaims %+v\nreference   %+v", got, want)
		}
	})
}

// referenceClaims reads the registered claims from encoding/json's generic
// decoding, independently of parseClaims.
func referenceClaims(payload []byte) (claims, bool) {
	var c claims
	if t := bytes.TrimLeft(payload, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return c, false
	}
	if !json.Valid(payload) {
		return c, false
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return c, false
	}
	str := func(name string, out *string) bool {
		switch v := m[name].(type) {
		case nil:
			return true
		case string:
			*out = v
			return true
		}
		return false
	}
	date := func(name string, out *time.Time) bool {
		switch v := m[name].(type) {
		case nil:
			return true
		case json.Number:
			f, err := v.Float64()
			if err != nil || f < 0 || f > 253402300800 {
				return false
			}
			sec, frac := math.Modf(f)
			*out = time.Unix(int64(sec), int64(frac*1e9)).UTC()
			return true
		}
		return false
	}
	if !str("iss", &c.Issuer) || !str("sub", &c.Subject) || !str("jti", &c.ID) ||
		!date("exp", &c.Expiry) || !date("nbf", &c.NotBefore) || !date("iat", &c.IssuedAt) {
		return c, false
	}
	switch v := m["aud"].(type) {
	case nil:
	case string:
		c.Audience, c.HasAud = []string{v}, true
	case []any:
		c.Audience, c.HasAud = []string{}, true
		for _, item := range v {
			s, ok := item.(string)
			if !ok && item != nil { // null reads as "", as in go-oidc's audience
				return c, false
			}
			c.Audience = append(c.Audience, s)
		}
	default:
		return c, false
	}
	return c, true
}
