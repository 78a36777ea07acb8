package agentv1

import (
	"strings"
	"testing"
)

func TestParseFileBitmap(t *testing.T) {
	tests := []struct {
		name    string
		bitmap  []byte
		n       int
		want    int
		wantErr string
	}{
		{name: "all of 8", bitmap: []byte{0xff}, n: 8, want: 8},
		{name: "all of 10", bitmap: []byte{0xff, 0b11}, n: 10, want: 10},
		{name: "one of 10", bitmap: []byte{0, 0b10}, n: 10, want: 1},
		{name: "bit past the end", bitmap: []byte{0, 0b100}, n: 10, wantErr: "past the last"},
		{name: "too short", bitmap: []byte{0xff}, n: 10, wantErr: "need 2"},
		{name: "too long", bitmap: []byte{1, 0, 0}, n: 10, wantErr: "need 2"},
		{name: "empty selection", bitmap: []byte{0, 0}, n: 10, wantErr: "no file"},
		{name: "version without files", bitmap: nil, n: 0, wantErr: "no files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFileBitmap(tt.bitmap, tt.n)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseFileBitmap = %d, %v; want an error mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFileBitmap = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestFileBitmapSetAndHas(t *testing.T) {
	b := NewFileBitmap(17)
	for _, i := range []int{0, 7, 8, 16} {
		b.Set(i)
	}
	n, err := ParseFileBitmap(b, 17)
	if err != nil || n != 4 {
		t.Fatalf("ParseFileBitmap = %d, %v; want 4", n, err)
	}
	for i := range 17 {
		if want := i == 0 || i == 7 || i == 8 || i == 16; b.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, b.Has(i))
		}
	}
}

// FuzzParseFileBitmap: the server parses bitmaps from any authenticated
// agent. It must never panic, and what it accepts must select between 1
// and n files, every one of them addressable with Has.
func FuzzParseFileBitmap(f *testing.F) {
	f.Add([]byte{0xff, 0b11}, 10)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n > 1<<20 {
			return
		}
		got, err := ParseFileBitmap(b, n)
		if err != nil {
			return
		}
		if got < 1 || got > n {
			t.Fatalf("selected %d of %d", got, n)
		}
		count := 0
		for i := range n {
			if FileBitmap(b).Has(i) {
				count++
			}
		}
		if count != got {
			t.Fatalf("Has finds %d, ParseFileBitmap counted %d", count, got)
		}
	})
}
