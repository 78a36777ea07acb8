// Package nspattern matches namespace names against Argo CD's namespace
// pattern lists (application.namespaces, AppProject sourceNamespaces): gobwas
// globs, or unanchored regular expressions when an entry is wrapped in /…/.
package nspattern
