// Package kube feeds the control plane's store from the controller's shared watch
// cache (Applications, AppProjects, ConfigMaps and Secrets of Argo CD's namespace) and
// reports configuration problems as Kubernetes Events on the objects at fault.
package kube
