// Package certs manages the webhook's serving certificate when no
// cert-manager is installed: a CA and a leaf kept in one Secret shared by all
// replicas, written to the serving directory, and injected as caBundle; and,
// from the same CA, the extension proxy's serving certificate in a Secret of
// its own that never holds the CA's key; and, with or without cert-manager,
// the CA bundle in a ConfigMap for whoever verifies those certificates.
package certs
