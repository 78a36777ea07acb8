package authn

import (
	"bytes"
	"encoding/json"
	"errors"
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
				if !errors.Is(err, ErrMalformed) {
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
	tok, err := parse(valid)
	if err != nil {
		t.Fatal(err)
	}
	if tok.header.Alg != "HS256" || len(tok.signature) != 32 || string(tok.signingInput)+"." != valid[:len(tok.signingInput)+1] {
		t.Errorf("parsed %+v", tok)
	}

	long := make([]byte, MaxTokenBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	long[10], long[20] = '.', '.'
	if _, err := parse(string(long)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a token over MaxTokenBytes: error = %v", err)
	}
	for _, s := range []string{"..", "a..", "..b", enc([]byte(`{"alg":""}`)) + "." + enc([]byte(`{}`)) + "."} {
		if _, err := parse(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("parse(%q): error = %v, want ErrMalformed", s, err)
		}
	}
}

// FuzzClaimSet holds claimSet, which splits a claim set itself, to what
// encoding/json makes of it: the same refusals, the same names and the same
// raw values.
func FuzzClaimSet(f *testing.F) {
	for _, s := range []string{
		`{"iss":"argocd","sub":"alice:login","iat":1772362800,"exp":1772445600,"jti":"j"}`,
		" {\n \"iss\" : \"argo\\u0063d\" , \"sub\":\"a\\\"b\", \"exp\" : 1.7724456e9 }\n",
		`{"iss":"evil","iss":"argocd"}`,
		`{"gr\u006fups":["a"],"groups":"b"}`,
		`{"aud":["x","y"],"federated_claims":{"user_id":"u","nested":[{"a":"}"},"]\\"]}}`,
		`{"a":true,"b":false,"c":null,"d":-0.5e-3,"e":[],"f":{}}`,
		"{\"\xff\":1}",
		`{}`, `[]`, `null`, `{"a":1} x`, `{"a":}`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, gotErr := claimSet(payload)
		var want map[string]json.RawMessage
		wantErr := strictUnmarshal(payload, &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("claimSet error %v, encoding/json error %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("claimSet %d members, encoding/json %d", len(got), len(want))
		}
		for name, w := range want {
			if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
				t.Fatalf("member %q: claimSet %q, encoding/json %q", name, g, w)
			}
		}
	})
}
