// Package v1alpha1 is Gatehouse's own API, gatehouse.io/v1alpha1: the
// PolicyBundle resource (where a policy bundle is pulled from, with which
// credentials) and the checks its spec must pass, which the CRD's schema,
// the admission webhook and the fetcher all apply; and Gatehouse's
// configuration vocabulary (names.go): the gatehouse-extensions ConfigMap,
// the labels and annotations Gatehouse reads, and the reasons its Events
// and conditions carry. Argo CD's names are internal/argocd/settings'. A
// leaf: it imports nothing of ours.
package v1alpha1
