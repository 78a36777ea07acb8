package policies

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// BenchmarkCheckMegabyteOfGrants compares the control plane's gate
// (checkSource) with the full compile the proxy's engine does (Check) on
// the default policy with 1 MiB of grants (about 6,000 roles, 12,000
// grants).
func BenchmarkCheckMegabyteOfGrants(b *testing.B) {
	data, err := DecodeData(testkit.Grants(1 << 20))
	if err != nil {
		b.Fatal(err)
	}
	bundle := DefaultBundle(data)
	for name, check := range map[string]func(context.Context, Bundle, ...Option) ([]string, error){"Check": Check, "CheckSource": checkSource} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := check(context.Background(), bundle); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
