// Package kubeyaml reads Kubernetes manifests from files, directories and
// standard input exactly as `kubectl apply -R -f` would send them to the API
// server: every document, Lists expanded, in input order, each object with the
// file, document and list item it came from. It reads only regular files,
// bounded in size, and reports what the API server would refuse. Both
// `gatehouse admit` and the directory source (controlplane/yamldir) read
// through it, so a CI gate sees what the cluster would get.
package kubeyaml
