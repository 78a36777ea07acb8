// Package argocd is the home of Argo CD's own semantics that Gatehouse must
// reproduce exactly: the API types it reads (v1alpha1), namespace patterns
// (nspattern) and the settings Argo CD keeps in its ConfigMaps (settings).
package argocd
