package main

import (
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// The names the controller, snapshot, admit and dev commands of this
// package use for what moved to policies/limitscli (issue 25 §1).
// They go when those commands move to their own packages and call the new
// ones directly.

// policyLimitsOptions are limitscli.Options under their old name.
type policyLimitsOptions struct{ limitscli.Options }

func (o *policyLimitsOptions) limits() (policies.Limits, error) { return o.Limits() }

// policySandboxCommand is limitscli.SandboxCommand, which TestMain answers.
const policySandboxCommand = limitscli.SandboxCommand
