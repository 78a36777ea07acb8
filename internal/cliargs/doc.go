// Package cliargs owns what a gatehouse command says about its positional
// arguments: which one is missing or unexpected, what it is, the usage line
// and an example to copy, and which shell completion each argument gets.
//
// It must never import anything of ours but what cobra needs: every CLI
// package, and the slim binaries' ones, use it.
package cliargs
