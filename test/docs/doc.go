// Package docs holds the documentation to the code it describes: every
// example of docs/policy-guide.md runs through the policy engine, every
// message docs/operations.md, docs/migration.md and docs/controller.md quote, and
// every output block a page marks check=messages, is one the code writes,
// every field of the extension config and of the PolicyBundle is in
// docs/configuration.md, and the links between documents resolve.
package docs
