// Package sidecar owns the contract between the agent and the proxy of one Pod: the shared volume
// (layout, manifest, atomic writer, verifying loader and watcher) and ProxyState, the proxy's /state reply.
// It must never import agent, controlplane, proxy or webhook, nor link k8s.io/, sigs.k8s.io/ or gRPC.
//
// The manifest's entries are package snapshot's FileMetas, with the version's name; the
// agent uses the writer, the proxy the loader and watcher, and the agent confirms versions
// with the ProxyState the proxy serves.
//
// # Layout
//
//	<root>/current                    symlink, target "versions/<version>" (relative)
//	<root>/versions/<version>/        one complete, immutable snapshot
//	<root>/versions/<version>/manifest.json
//	<root>/versions/<version>/<path>  every file the manifest lists, nothing else
//	<root>/versions/<version>.tmp-*   a snapshot being built (never pointed at)
//	<root>/current.tmp-*              the next symlink, an instant before rename(2)
//
// A version directory is built under a temporary name, every file and directory is
// fsync'ed, manifest.json is written last, the directory is renamed into place and only
// then is current replaced by rename(2) of a fresh symlink. A reader therefore sees
// either the old version or the new one, never a mix. The version current pointed at
// before is kept, so a reader that resolved the link an instant before the swap can
// finish; the next version is built in the directory of the version before last,
// keeping only the files that are the current version's (recycle.go), and stale
// temporary entries are removed. Versions are immutable once installed, so a file
// whose content the current version holds is hard-linked from it rather than
// written again (Writer.Begin, Stage), carrying the proof of its content when it is
// the very file that was proven (docs/snapshot.md: what the agent checks, and when).
//
// # Permissions
//
// Files holding secrets are 0600. Other files are 0640 (the manifest's mode with the
// bits for others dropped and owner-read added; 0640 when the manifest gives none).
// Directories are 0750, except that a snapshot holding any secret has its whole
// version directory tree at 0700, and its manifest.json (which carries the secrets'
// hashes) at 0600: one rule, no directory of such a snapshot is open to the group.
// versions/ itself is 0755 and holds nothing but directories.
//
// Consequence for deployment: the proxy can read a snapshot with secrets only when it
// runs as the agent's UID. A proxy with another UID but the same fsGroup (Kubernetes
// sets the setgid bit on the volume, so new entries inherit the group; the writer keeps
// that bit when it sets modes) can read snapshots without secrets through the group
// bits. Modes are set explicitly after creation, so the process umask does not matter.
//
// # Trust
//
// The reader trusts nothing on the volume: the link must point at versions/<name>, no
// entry inside a version directory may be a symlink or anything but a regular file or
// directory, the directory must hold exactly the manifest's files, every path must be
// relative and clean, limits bound sizes and counts, and every byte is verified against
// the manifest's sha256 before a snapshot is handed out.
package sidecar
