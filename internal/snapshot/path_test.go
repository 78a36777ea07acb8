package snapshot

import (
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		wantErr string // "" means the path is accepted
	}{
		{"plain file", "extensions.json", ""},
		{"nested file", "config/backends/cluster-a.json", ""},
		{"dots inside names are names", "a..b/..c/d..", ""},
		{"hidden file", ".gatehouse", ""},
		{"manifest.json is a name like any other", "manifest.json", ""},
		{"segment of 255 bytes", strings.Repeat("a", 255), ""},

		{"empty", "", "empty"},
		{"absolute", "/etc/passwd", "absolute"},
		{"parent escape", "../etc/passwd", `".." segment`},
		{"parent escape after a name", "a/../../b", `".." segment`},
		{"parent alone", "..", `".." segment`},
		{"dot alone", ".", `"." segment`},
		{"leading dot segment", "./a", `"." segment`},
		{"trailing dot segment", "a/.", `"." segment`},
		{"empty segment", "a//b", "empty segment"},
		{"trailing slash", "a/", "ends with a slash"},
		{"backslash", `a\b`, "backslash"},
		{"windows parent escape", `..\..\evil`, "backslash"},
		{"NUL", "a\x00b", "control character"},
		{"newline", "a\nb", "control character"},
		{"DEL", "a\x7fb", "control character"},
		{"invalid UTF-8", "a\xffb", "UTF-8"},
		{"segment over 255 bytes", strings.Repeat("a", 256), "segment is 256 bytes"},
		{"path over 4096 bytes", strings.Repeat("abcdefg/", 512) + "x", "more than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePath(tt.path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePath(%q) = %v, want accepted", tt.path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidatePath(%q) = %v, want an error mentioning %q", tt.path, err, tt.wantErr)
			}
		})
	}
}
