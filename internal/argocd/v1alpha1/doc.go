// Package v1alpha1 holds the parts of Argo CD's argoproj.io/v1alpha1
// Application and AppProject that Gatehouse reads, and nothing else:
// decoding only these fields keeps admission fast and the watch cache small.
package v1alpha1
