package client

import (
	"fmt"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// inlined returns a delta announcement's inline content by SHA-256 (nil
// when it carries none), after checking its shape: one entry per changed
// entry, and only in a delta. The content itself is checked against the
// manifest as it is written (sidecar.FileWriter), as a download is.
func inlined(c *agentv1.ConfigAvailable) (map[string][]byte, error) {
	content := c.GetContent()
	if len(content) == 0 {
		return nil, nil
	}
	if c.GetBaseVersion() == "" {
		return nil, fmt.Errorf("announcement of version %q carries content without a delta", c.GetVersion())
	}
	changed := c.GetChanged()
	if len(content) != len(changed) {
		return nil, fmt.Errorf("announcement of version %q carries %d contents for %d changed files", c.GetVersion(), len(content), len(changed))
	}
	out := make(map[string][]byte, len(content))
	for i, f := range changed {
		out[f.GetSha256()] = content[i]
	}
	return out, nil
}

// writeInline writes the missing files of st whose content came with the
// announcement, and returns the rest, to download. Content of another size
// than the manifest's is left for the download; content that does not hash
// to the manifest's SHA-256 fails the attempt, as a corrupt download does.
func writeInline(st *sidecar.Stage, missing []int, content map[string][]byte) ([]int, int64, error) {
	if len(content) == 0 {
		return missing, 0, nil
	}
	files := st.Manifest().Files
	rest := missing[:0:0]
	var n int64
	for _, i := range missing {
		b, ok := content[files[i].SHA256]
		if !ok || int64(len(b)) != files[i].Size {
			rest = append(rest, i)
			continue
		}
		fw, err := st.Create(i)
		if err != nil {
			return nil, n, err
		}
		if _, err := fw.Write(b); err != nil {
			_ = fw.Finish()
			return nil, n, err
		}
		if err := fw.Finish(); err != nil {
			return nil, n, fmt.Errorf("content of %s sent with the announcement: %w", files[i].Path, err)
		}
		n += int64(len(b))
	}
	return rest, n, nil
}
