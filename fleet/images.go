package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"suanli/agent"
	"suanli/models"
)

// MaxNodeImageRefs is the most image names a node's list keeps: more than
// any GPU host holds, and a bound on what one heartbeat may write.
const MaxNodeImageRefs = 500

// nodeImagesOf turns a heartbeat's image list into the rows stored for
// the node, one per repository:tag name, sorted by name, and their hash
// ("" for none), which says whether the list changed. Names that are not
// names (Docker's "<none>:<none>"), and text longer than any real name,
// are left out.
func nodeImagesOf(imgs []agent.LocalImage, now time.Time) ([]models.NodeImage, string) {
	var rows []models.NodeImage
	seen := map[string]bool{}
	for _, im := range imgs {
		for _, ref := range im.Refs {
			ref = strings.TrimSpace(ref)
			if ref == "" || strings.Contains(ref, "<none>") || len(ref) > 512 || !utf8.ValidString(ref) || seen[ref] {
				continue
			}
			seen[ref] = true
			rows = append(rows, models.NodeImage{Ref: ref, ImageID: cleanShort(im.ID, 128), SizeBytes: max(im.SizeBytes, 0),
				CUDAVersion: cleanShort(im.CUDAVersion, 32), SeenAt: now})
		}
	}
	if len(rows) == 0 {
		return nil, ""
	}
	slices.SortFunc(rows, func(a, b models.NodeImage) int { return strings.Compare(a.Ref, b.Ref) })
	if len(rows) > MaxNodeImageRefs {
		slog.Warn("node reports more images than are kept", "images", len(rows), "kept", MaxNodeImageRefs)
		rows = rows[:MaxNodeImageRefs]
	}
	h := sha256.New()
	for _, r := range rows {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\n", r.Ref, r.ImageID, r.SizeBytes, r.CUDAVersion)
	}
	return rows, hex.EncodeToString(h.Sum(nil))
}

// cleanShort is s trimmed, or "" when it is longer than n bytes or not
// UTF-8 (an agent's word, stored as it is only when it is plausible).
func cleanShort(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n || !utf8.ValidString(s) {
		return ""
	}
	return s
}

// cleanVolumeRoot is the agent's --volume-root as stored: an absolute
// path of plausible length, else "".
func cleanVolumeRoot(p string) string {
	p = cleanShort(p, 1024)
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	return p
}
