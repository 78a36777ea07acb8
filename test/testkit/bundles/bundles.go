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
	return DataBundle(revision, []byte(`{"gatehouse": {"bindings": {"users": {"`+user+`": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`))
}

// DataBundle is an OPA bundle of one data document (JSON, checked against
// the default policy's data model) and no Rego, at revision.
func DataBundle(revision string, data []byte) ([]byte, error) {
	doc, err := policies.DecodeData(data)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := policies.WriteTarball(&buf, policies.Bundle{Data: doc}, nil, policies.WriteOptions{Revision: revision}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
