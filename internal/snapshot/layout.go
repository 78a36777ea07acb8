package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
)

// Paths of a snapshot, relative to its root. docs/snapshot.md describes each.
const (
	IndexFile       = "gatehouse.json"
	extensionsFile  = "extensions.json"
	clustersFile    = "clusters.json"
	authFile        = "auth.json"
	applicationsDir = "applications"
	projectsDir     = "projects"
	PolicyDir       = "policy"
	secretsDir      = "secrets"
)

// Shard counts. Applications change one at a time and there may be tens of
// thousands, so they spread over 256 files (about 40 per file at 10,000) and a
// change to one rewrites one small file. Projects are fewer; 16 files.
const (
	applicationShards = 256
	projectShards     = 16
)

// shardOf places key in one of n shards (n a power of two up to 256) by its
// SHA-256, so the placement is the same on every replica and spread evenly
// whatever the names look like.
func shardOf(key string, n int) string {
	sum := sha256.Sum256([]byte(key))
	b := sum[0] & byte(n-1)
	if n <= 16 {
		return hex.EncodeToString([]byte{b})[1:]
	}
	return hex.EncodeToString([]byte{b})
}

// ApplicationShard is the file an Application with this key lives in.
func ApplicationShard(key string) string {
	return applicationsDir + "/" + shardOf(key, applicationShards) + ".json"
}

// projectShard is the file a project with this name lives in.
func projectShard(name string) string {
	return projectsDir + "/" + shardOf(name, projectShards) + ".json"
}

// SecretPath is the SecretRef path of one key of a Kubernetes Secret.
func SecretPath(secret, key string) string { return secret + "/" + key }
