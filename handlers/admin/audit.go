package admin

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/platform"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/adminpages"
)

// auditFields are the audit log's filters, as query parameters.
var auditFields = []string{"action", "subject", "actor", "from", "to"}

// auditFilter reads the audit log's filters from the query. A bad date is
// a message beside its field, and that filter is left out. The actor is a
// user id, an email address or "system"; an address with no account
// matches nothing.
func (h *Handler) auditFilter(c echo.Context) (models.AuditFilter, views.Form, error) {
	f := views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	for _, n := range auditFields {
		f.Values[n] = queryValue(c, n)
	}
	af := models.AuditFilter{Action: f.Get("action"), Subject: f.Get("subject"), Page: pageParam(c), PerPage: models.AdminPerPage}
	vc := handlers.ViewCtx(c)
	for _, n := range []string{"from", "to"} {
		s := f.Get(n)
		if s == "" {
			continue
		}
		d, err := time.ParseInLocation("2006-01-02", s, pricing.Shanghai)
		if err != nil || d.Year() < 2000 || d.Year() > 9999 {
			f.Errors[n] = vc.T("admin.audit.bad_date")
			continue
		}
		if n == "from" {
			af.From = d
		} else {
			af.To = d.AddDate(0, 0, 1) // the whole day
		}
	}
	switch a := f.Get("actor"); {
	case a == "" || strings.EqualFold(a, "system"):
		af.Actor = a
	case strings.Contains(a, "@"):
		u, err := h.DB.UserByEmail(c.Request().Context(), models.NormalizeEmail(a))
		switch {
		case err == nil:
			af.Actor = strconv.FormatInt(u.ID, 10)
		case apperr.Code(err) == apperr.ENOTFOUND:
			af.Actor = "none" // matches nothing
		default:
			return af, f, err
		}
	default:
		if _, err := strconv.ParseInt(a, 10, 64); err != nil {
			f.Errors["actor"] = vc.T("admin.audit.bad_actor")
		} else {
			af.Actor = a
		}
	}
	return af, f, nil
}

// auditActors returns the users who acted in the entries, by id.
func (h *Handler) auditActors(c echo.Context, entries []models.AuditEntry) (map[int64]models.User, error) {
	var ids []int64
	for _, e := range entries {
		if e.ActorID != nil {
			ids = append(ids, *e.ActorID)
		}
	}
	return platform.UsersByIDs(c.Request().Context(), h.DB, ids)
}

// AdminAudit is GET /admin/audit: the audit log, newest first, filtered
// by action, subject, actor and date.
func (h *Handler) AdminAudit(c echo.Context) error {
	af, f, err := h.auditFilter(c)
	if err != nil {
		return err
	}
	entries, total, err := h.DB.AuditLog(c.Request().Context(), af)
	if err != nil {
		return err
	}
	actors, err := h.auditActors(c, entries)
	if err != nil {
		return err
	}
	vm := adminpages.AdminAuditVM{Filter: f, Entries: auditEntryVMs(entries, actors)}
	values := url.Values{}
	for _, n := range auditFields {
		values.Set(n, f.Get(n))
	}
	vm.Pager = adminpages.NewPager(af.Page, models.AdminPerPage, total, pageLinker(c, routenames.AdminAudit, values))
	vm.CSVURL = pageLinker(c, routenames.AdminAuditCSV, values)(1)
	status := http.StatusOK
	if len(f.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return handlers.Render(c, status, adminpages.AdminAuditPage(handlers.ViewCtx(c), vm))
}

// auditCSVMax is the most entries one export holds.
const auditCSVMax = 100_000

// AdminAuditCSV is GET /admin/audit.csv: the filtered audit log as CSV
// (UTF-8 with a byte-order mark, so spreadsheets read Chinese correctly).
func (h *Handler) AdminAuditCSV(c echo.Context) error {
	af, f, err := h.auditFilter(c)
	if err != nil {
		return err
	}
	for _, n := range auditFields {
		if msg := f.Err(n); msg != "" {
			return &apperr.Error{Code: apperr.EINVALID, Field: n, Key: "admin.audit.bad_filter", Args: []any{n, msg}, Message: "bad " + n}
		}
	}
	// Entries appended while exporting would shift the pages: stop at now.
	if now := h.DB.Now().Add(time.Second); af.To.IsZero() || af.To.After(now) {
		af.To = now
	}
	ctx := c.Request().Context()
	af.PerPage = 500
	var w *csv.Writer
	for af.Page = 1; (af.Page-1)*af.PerPage < auditCSVMax; af.Page++ {
		entries, _, err := h.DB.AuditLog(ctx, af)
		if err != nil {
			if w != nil {
				// Too late for an error page: end the file where it broke.
				w.Flush()
				return nil
			}
			return err
		}
		actors, err := h.auditActors(c, entries)
		if err != nil && w == nil {
			return err
		}
		if w == nil {
			name := "suanli-audit-" + h.DB.Now().In(pricing.Shanghai).Format("20060102-150405") + ".csv"
			if w, err = handlers.CSVAttachment(c, name, "id", "time_asia_shanghai", "actor_id", "actor_email", "actor_ip", "action", "subject", "amount_cny", "detail"); err != nil {
				return nil // the client went away
			}
		}
		for _, e := range entries {
			actorID, email := "system", ""
			if e.ActorID != nil {
				actorID = strconv.FormatInt(*e.ActorID, 10)
				email = actors[*e.ActorID].Email
			}
			amount := ""
			if e.AmountFen != nil {
				amount = handlers.CSVYuan(*e.AmountFen)
			}
			_ = w.Write([]string{strconv.FormatInt(e.ID, 10), handlers.CSVTime(e.At), actorID,
				handlers.CSVText(email), handlers.CSVText(e.ActorIP), handlers.CSVText(e.Action), handlers.CSVText(e.Subject), amount, handlers.CSVText(e.Detail)})
		}
		if len(entries) < af.PerPage {
			break
		}
	}
	w.Flush()
	return w.Error()
}
