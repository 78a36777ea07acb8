// Package authz owns the extension proxy's policy input: an Index of one
// snapshot's Applications, projects and clusters, built once per snapshot
// (the Applications as pointer-free records, the projects and clusters as
// the very values the policies engine reads), and Input, the one function that
// turns the index, a verified identity and a request into policies.Input.
// Nothing in the input comes from a request header alone.
package authz
