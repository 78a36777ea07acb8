package devcli

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// dev takes its directory from --dir and token its identity from flags: an
// argument is refused with exit status 2, naming dev's commands or the
// flags to use, and an example.
func TestArgumentErrorsNameTheArgumentAndShowAnExample(t *testing.T) {
	gatehouse.RunCases(t, []clitest.Case{
		{Name: "dev with a word", Args: []string{"dev", "tokn"}, WantCode: 2,
			WantStderr: `dev: unknown command "tokn" for gatehouse dev; its commands are token` + "\ndid you mean: gatehouse dev token\nusage: gatehouse dev [flags]\nexample: gatehouse dev"},
		{Name: "token with a user as argument", Args: []string{"dev", "token", "alice"}, WantCode: 2,
			WantStderr: `dev token: unexpected argument "alice": token takes no arguments; name the user with --user and the groups with --groups` + "\nusage: gatehouse dev token --user USER [--groups G1,G2] [flags]\nexample: TOKEN=$(gatehouse dev token --user alice --groups dev)"},
	})
}
