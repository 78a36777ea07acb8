package browser

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// find returns the browser to run, or "" and why there is none.
func find() (bin, why string) {
	if p := os.Getenv("GATEHOUSE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Sprintf("GATEHOUSE_CHROMIUM=%s: %v", p, err)
		}
		return p, ""
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, ""
		}
	}
	return "", "no chromium on PATH"
}

// Require returns the browser to run, or skips t (fails it under
// GATEHOUSE_E2E_BROWSER=required) saying that what needs headless Chromium
// and how to install it.
func Require(t testing.TB, what string) string {
	t.Helper()
	p, why := find()
	if p != "" {
		return p
	}
	msg := what + " needs headless Chromium (" + why + "): run test/tools/install-browser.sh or `apt-get install -y chromium` " +
		"(Debian; `make test` does this itself when run as root), or point GATEHOUSE_CHROMIUM at a Chromium or Chrome binary"
	if os.Getenv("GATEHOUSE_E2E_BROWSER") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
