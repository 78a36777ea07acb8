package agentv1

import "testing"

// TestManifestVersionIsPinned: every controller replica and every agent
// already running computes these versions for these files; a change to
// the algorithm (or to what it is fed) would make agents of one release
// refuse the deltas of another and re-download everything.
func TestManifestVersionIsPinned(t *testing.T) {
	tests := []struct {
		name  string
		files []*FileMeta
		want  string
	}{
		{"no files", nil, "11b423defabdc9dc77a35942693bc41bf61ed8a1baa1ddb4e0d44d746d1ea31f"},
		{"one file", []*FileMeta{{Path: "a", Sha256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb", Size: 1, Mode: 0o644, Kind: FileKind_FILE_KIND_CONFIG}},
			"f39afa38e995e0562e8dfedab3171861fc33a0e823acf071a2aba2d3b8f09118"},
		{"every kind, empty and large files, non-ASCII path", []*FileMeta{
			{Path: "applications/0a.json", Sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Size: 0, Mode: 0o640, Kind: FileKind_FILE_KIND_CONFIG},
			{Path: "policy/extensions/policy.rego", Sha256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb", Size: 1, Mode: 0o644, Kind: FileKind_FILE_KIND_POLICY},
			{Path: "secrets/argocd-secret/server.secretkey", Sha256: "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d", Size: 1 << 40, Mode: 0o600, Kind: FileKind_FILE_KIND_SECRET},
			{Path: "ünïcode/é.json", Sha256: "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6", Size: 12345, Mode: 0o777, Kind: FileKind_FILE_KIND_CONFIG},
		}, "b4dcb2136b46e8baf559f64c7a828917826e569c9890464da5f1654171660b9b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ManifestVersion(tt.files); got != tt.want {
				t.Errorf("version %s, want %s", got, tt.want)
			}
		})
	}
}
