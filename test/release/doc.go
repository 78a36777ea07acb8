// Package release checks what `make release` writes: it builds a release for
// one platform (linux/amd64, to keep make test's time) into a temporary
// directory and checks the checksums, that each binary prints its version,
// that each SBOM lists the modules the binary links, and that install.yaml
// pins every image to the version and passes a server-side dry run on a
// real kube-apiserver. make test sets GATEHOUSE_RELEASE=required, so a
// missing tool fails it instead of skipping.
package release
