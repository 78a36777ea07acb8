package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Assets returns the directory holding kube-apiserver, etcd and kubectl for
// envtest: $KUBEBUILDER_ASSETS, or what test/tools/install.sh builds (and
// caches) when it is unset.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("locate test/tools/install.sh: no caller information")
	}
	script := filepath.Join(filepath.Dir(here), "..", "tools", "install.sh")
	out, err := exec.Command(script).Output()
	if err != nil {
		return "", fmt.Errorf("build test binaries with %s: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}
