// Package yamldir reads a directory of Kubernetes YAML as if it were the cluster:
// Applications, AppProjects, ConfigMaps and Secrets become the control plane's state,
// exactly as the Kubernetes source would project them, and edits are picked up live.
package yamldir
