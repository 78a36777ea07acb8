// Package demo owns what `gatehouse dev` runs around the real controller,
// agent and proxy so that one machine shows the whole product: a small SSO
// issuer on loopback and the tokens it mints, a demo extension backend per
// cluster that answers with the headers it was sent, what an examples
// directory asks of both, and the tour that checks the product against it.
package demo
