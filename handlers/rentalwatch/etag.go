package rentalwatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/changefeed"
	"suanli/handlers"
	"suanli/models/rentalstore"
)

// APIRentalShow is GET /api/v1/rentals/{id} with a weak ETag: sent back
// in If-None-Match, it answers 304 with no body while the rental is as
// the client saw it, having read only the rental's row (besides the
// caller's credential and membership) instead of everything the answer
// holds. Otherwise it answers as handlers.Handler.APIRentalShow, with the
// ETag.
func (h *Handler) APIRentalShow(c echo.Context) error {
	etag, err := h.rentalETag(c)
	if err != nil {
		return err
	}
	if etag != "" {
		c.Response().Header().Set("ETag", etag)
		if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
			return c.NoContent(http.StatusNotModified)
		}
	}
	return h.Handler.APIRentalShow(c)
}

// rentalETag names the rental's state as the caller sees it, or "" when
// it cannot (no change feed, or the feed has a gap; a rental that does
// not exist or is not the caller's: the full answer says so). It hashes
// the rental's row (which the meter's passes change: the answer's cost
// so far is at most one pass old) and the feed's versions of what the
// answer shows beside it: the timeline, GPUs, launch progress, labels
// (the rental's topic), its volume, node and organisation, and the node
// of the volume it left behind (files_left.node_back: one more read). A
// change outside the row reaches the version within the feed's delay (on
// SQLite its poll interval). The version is this process's feed's own
// (changefeed.Feed.Version): a tag from another replica, or from this
// one before a restart, never matches, and is answered 200 with this
// process's tag.
func (h *Handler) rentalETag(c echo.Context) (string, error) {
	u := handlers.CurrentUser(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if h.Changes == nil || u == nil || err != nil || id <= 0 {
		return "", nil
	}
	ctx := c.Request().Context()
	r, err := h.DB.RentalByID(ctx, id)
	if err != nil {
		return "", nil // the full answer says why
	}
	if _, _, err := h.Accounts.Authorize(ctx, u, r.OrgID, accounts.ViewRentals); err != nil {
		return "", nil
	}
	// The volume's own changes are the rental's (its trigger names
	// left_by_rental_id); its node's health is not.
	left, err := rentalstore.LeftVolume(ctx, h.DB, r.ID)
	if err != nil {
		return "", nil // the full answer fails too, and says so
	}
	var leftNode *int64
	if left != nil {
		leftNode = left.NodeID
	}
	v, ok := h.Changes.Version(changefeed.RentalKeys(r.ID, &r.OrgID, r.VolumeID, r.NodeID, leftNode)...)
	if !ok {
		return "", nil
	}
	row, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	sum.Write(row)
	sum.Write([]byte("|" + v + "|" + strconv.FormatInt(u.ID, 10)))
	return `W/"r` + strconv.FormatInt(r.ID, 10) + "-" + hex.EncodeToString(sum.Sum(nil)[:12]) + `"`, nil
}

// etagMatches reports whether an If-None-Match header names etag: "*",
// or a tag that matches it in the weak comparison RFC 9110 (§13.1.2)
// prescribes for If-None-Match.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == want {
			return true
		}
	}
	return false
}
