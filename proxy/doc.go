// Package proxy is the extension reverse proxy: it serves Argo CD UI extension
// traffic, authenticating each request (authn), authorising it and forwarding it
// to the extension's backends. It never talks to the Kubernetes API.
package proxy
