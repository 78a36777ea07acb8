// Package yamldir reads a directory of Kubernetes YAML as if it were the cluster:
// Applications, AppProjects, ConfigMaps and Secrets, read as kubectl apply -R would
// read them (kubeyaml), become the control plane's state exactly as the Kubernetes
// source would project them, and edits are picked up live.
package yamldir
