// Package arch checks the dependency rules of docs/architecture.md: every
// package of the module against its row of the import table (what of ours
// it may import, what it must never link), and that nothing imports cmd/.
package arch
