// Package cliexit owns how a gatehouse command ends: the exit status a
// command asks for (Error), and the one mapping from a command's error to
// the process's status and last line on standard error (Status), shared by
// cmd/gatehouse and the role CLI packages' tests.
//
// It must never import anything of ours: every CLI package may use it.
package cliexit
