// Package devcli is `gatehouse dev` and `gatehouse dev token`: the whole
// product on one machine from a directory of YAML. It builds the real
// controller, agent and proxy options (controllercli, agentcli, proxycli)
// by setting their fields, runs each part's own Run on loopback with a CA
// made for the run, and runs the tour internal/demo reads; internal/demo
// serves what stands around the parts (the SSO issuer, the backends).
//
// Only cmd/gatehouse imports it; it must never be linked by a slim binary
// (cmd/gatehouse-agent, cmd/gatehouse-proxy).
package devcli
