package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/offers"
)

// APIPage is the page a list endpoint of the API answers: ?page= (from
// 1) and ?per_page= (default 50, at most 200), as GET /api/v1/offers.
type APIPage struct {
	Page    int
	PerPage int
}

// Offset is how many items the earlier pages hold.
func (p APIPage) Offset() int { return (p.Page - 1) * p.PerPage }

// Slice returns the page's part of n items as [lo, hi).
func (p APIPage) Slice(n int) (lo, hi int) {
	lo = min(p.Offset(), n)
	return lo, min(lo+p.PerPage, n)
}

// MaxPage bounds page so that the offset stays far from overflow.
const MaxPage = 1_000_000

// PageParams reads page and per_page; either out of range is a 400
// naming the parameter.
func PageParams(c echo.Context) (APIPage, error) {
	p := APIPage{Page: 1, PerPage: offers.DefaultPerPage}
	for _, q := range []struct {
		name   string
		hi     int
		dst    *int
		detail string
	}{
		{"page", MaxPage, &p.Page, "page must be an integer from 1 to " + strconv.Itoa(MaxPage)},
		{"per_page", offers.MaxPerPage, &p.PerPage, "per_page must be an integer from 1 to " + strconv.Itoa(offers.MaxPerPage)},
	} {
		s := strings.TrimSpace(c.QueryParam(q.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > q.hi {
			return p, &apperr.Error{Code: apperr.EINVALID, Field: q.name, Message: q.detail}
		}
		*q.dst = n
	}
	return p, nil
}

// Within refuses a page past the last one, as GET /api/v1/offers does:
// a client that walks pages learns it went too far instead of reading an
// empty page as "no more". Page 1 of an empty list is an empty list.
func (p APIPage) Within(total int64) error {
	if p.Page == 1 || int64(p.Offset()) < total {
		return nil
	}
	pages := max((total+int64(p.PerPage)-1)/int64(p.PerPage), 1)
	return &apperr.Error{Code: apperr.EINVALID, Field: "page", Message: fmt.Sprintf("there is no page %d (there are %d)", p.Page, pages)}
}
