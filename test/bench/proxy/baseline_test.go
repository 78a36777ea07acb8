package proxybench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// baselineRev, when set, adds to BenchmarkProxyLoad the proxy as built at
// another revision of this repository, driven in the same rounds as the
// working tree's: a change's cost on the request path is then measured side
// by side, on the same cores, rather than against figures of another
// sitting. The revision must read the snapshots this tree writes (the same
// schema version).
var baselineRev = flag.String("proxybench.baseline-rev", "",
	"also run the proxy built at this git revision (e.g. main, efc0045), side by side with the working tree's")

// baselineBin is -proxybench.baseline-rev's binary built beforehand (the
// revision still names it), so that a run under the benchmark lock does
// not compile.
var baselineBin = flag.String("proxybench.baseline-bin", "",
	"with -proxybench.baseline-rev: that revision's gatehouse-proxy, built beforehand")

// baselineCmd is the command line of the baseline's proxy.
func baselineCmd(b *testing.B, rev string) []string {
	if *baselineBin != "" {
		return []string{*baselineBin}
	}
	return buildBaseline(b, rev)
}

// buildBaseline builds gatehouse-proxy at rev from a detached worktree of
// the repository and returns the command line that runs it.
func buildBaseline(b *testing.B, rev string) []string {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Fatalf("baseline %s: find the repository: %v", rev, err)
	}
	repo := strings.TrimSpace(string(top))
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", src, rev).CombinedOutput(); err != nil {
		b.Fatalf("baseline %s: git worktree add: %v\n%s", rev, err, out)
	}
	b.Cleanup(func() { _ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).Run() })
	bin := filepath.Join(dir, "gatehouse-proxy")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/gatehouse-proxy")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("baseline %s: go build: %v\n%s", rev, err, out)
	}
	return []string{bin}
}

// baselineName is the target's name in the table.
func baselineName(rev string) string { return fmt.Sprintf("gatehouse proxy at %s", rev) }
