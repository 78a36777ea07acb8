package main

import (
	"io"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
	"github.com/gatehouse-dev/gatehouse/webhook"
	"github.com/gatehouse-dev/gatehouse/webhook/admitcli"
)

// The names the controller, snapshot and dev commands of this package use
// for what moved to policies/limitscli and webhook/admitcli (issue 25 §1).
// They go when those commands move to their own packages and call the new
// ones directly.

// policyLimitsOptions are limitscli.Options under their old name.
type policyLimitsOptions struct{ limitscli.Options }

func (o *policyLimitsOptions) limits() (policies.Limits, error) { return o.Limits() }

// policySandboxCommand is limitscli.SandboxCommand, which TestMain answers.
const policySandboxCommand = limitscli.SandboxCommand

// printVerdicts is admitcli.WriteVerdicts, for gatehouse dev's tour.
func printVerdicts(w io.Writer, results []webhook.AdmitResult) bool {
	return admitcli.WriteVerdicts(w, results)
}
