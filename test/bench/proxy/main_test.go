package proxybench

import (
	"os"
	"testing"
)

// TestMain removes the binaries the benchmarks built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
