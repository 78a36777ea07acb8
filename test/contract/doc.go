// Package contract holds tests of the contracts between rooms that may not
// import each other: what the control plane writes into a snapshot and what
// the proxy's policy input reads from it, and the proxy's admin state and
// the agent's reading of it. Each fails when either side drifts.
package contract
