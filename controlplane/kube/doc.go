// Package kube feeds the control plane's store from the controller's shared watch
// cache (Applications, AppProjects, ConfigMaps, Secrets and PolicyBundles of Argo CD's
// namespace, and the stored PolicyBundle artifacts of Gatehouse's own), runs the
// elected replica's PolicyBundle reconciler (fetch, store, status), and reports
// configuration problems as Kubernetes Events on the objects at fault.
package kube
