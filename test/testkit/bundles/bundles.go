// Package bundles builds policy bundles for tests. It is apart from testkit,
// which the policies package's own tests import, because it imports
// policies.
package bundles

import (
	"bytes"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// GrantsBundle is an OPA bundle of grants for the default policy: user
// may call the metrics extension (role:ops), at revision.
func GrantsBundle(revision, user string) ([]byte, error) {
	data, err := policies.DecodeData([]byte(`{"gatehouse": {"bindings": {"users": {"` + user + `": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := policies.WriteTarball(&buf, policies.Bundle{Data: data}, nil, policies.WriteOptions{Revision: revision}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
