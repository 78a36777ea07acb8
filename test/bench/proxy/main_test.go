package proxybench

import (
	"os"
	"testing"
)

// TestMain removes the binaries the benchmarks built (not those of
// -proxybench.bin-dir).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" && *prebuilt == "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
