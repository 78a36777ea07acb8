package demo

import (
	"strings"
	"testing"
)

func TestParseTour(t *testing.T) {
	tests := []struct {
		name    string
		tour    string
		wantErr string
	}{
		{"a call", "steps:\n- title: t\n  call: {user: alice, path: /extensions/x}\n  expect: {status: 200}\n", ""},
		{"admit", "steps:\n- title: t\n  admit: [ALLOW Application a/b]\n", ""},
		{"an edit and its call", "steps:\n- title: t\n  edit: {file: p.yaml, replace: a, with: b}\n  call: {user: alice, path: /x}\n  expect: {status: 200}\n", ""},
		{"no steps", "steps: []\n", "no steps"},
		{"a misspelt field is refused", "steps:\n- title: t\n  call: {user: alice, path: /x}\n  expect: {staus: 200}\n", "unknown field"},
		{"no title", "steps:\n- call: {user: alice, path: /x}\n  expect: {status: 200}\n", "no title"},
		{"a call without expect", "steps:\n- title: t\n  call: {user: alice, path: /x}\n", "expect.status"},
		{"a call without user", "steps:\n- title: t\n  call: {path: /x}\n  expect: {status: 200}\n", "call needs user"},
		{"a relative path", "steps:\n- title: t\n  call: {user: a, path: x}\n  expect: {status: 200}\n", "path starting with /"},
		{"nothing to do", "steps:\n- title: t\n", "give one of"},
		{"admit and a call", "steps:\n- title: t\n  admit: [x]\n  call: {user: a, path: /x}\n  expect: {status: 200}\n", "give one of"},
		{"an edit without a call", "steps:\n- title: t\n  edit: {file: p.yaml, replace: a, with: b}\n", "edit needs a call"},
		{"an edit outside the directory", "steps:\n- title: t\n  edit: {file: ../p.yaml, replace: a, with: b}\n  call: {user: a, path: /x}\n  expect: {status: 200}\n", "inside the directory"},
		{"an edit of nothing", "steps:\n- title: t\n  edit: {file: p.yaml, with: b}\n  call: {user: a, path: /x}\n  expect: {status: 200}\n", "edit needs file and replace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTour([]byte(tt.tour))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
