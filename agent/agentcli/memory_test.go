package agentcli

import "testing"

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"16MiB", 16 << 20, false},
		{"512KiB", 512 << 10, false},
		{"2GiB", 2 << 30, false},
		{"1000", 1000, false},
		{"0", 0, false},
		{"16MB", 0, true},
		{"-1MiB", 0, true},
		{"", 0, true},
		{"9999999999GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
