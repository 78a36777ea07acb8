// Package policyconfig turns the places policy comes from — policy
// ConfigMaps (gatehouse.io/policy: "true") and PolicyBundle artifacts — into
// one policies.Bundle, with a problem for every key, root or setting two of
// them claim. The control plane's builder and the admission webhook use the
// same code, so what `kubectl apply` refuses is what the builder would.
package policyconfig
