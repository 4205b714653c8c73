package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/models"
	"suanli/models/platform"
	"suanli/routenames"
	"suanli/views/adminpages"
)

// riverStates are River's job states in the order the job page shows them.
var riverStates = []string{"available", "scheduled", "pending", "running", "retryable", "completed", "cancelled", "discarded"}

// failedJobsShown is how many failed jobs the job page lists.
const failedJobsShown = 50

// AdminJobs is GET /admin/jobs: River's queue, read-only — how many jobs
// of each kind are in each state, and the latest failures with their errors.
func (h *Handler) AdminJobs(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := platform.JobCounts(ctx, h.DB)
	if err != nil {
		return err
	}
	vm := adminpages.AdminJobsVM{Counts: map[string]map[string]int64{}, States: slices.Clone(riverStates)}
	for _, jc := range counts {
		if vm.Counts[jc.Kind] == nil {
			vm.Counts[jc.Kind] = map[string]int64{}
			vm.Kinds = append(vm.Kinds, jc.Kind)
		}
		vm.Counts[jc.Kind][jc.State] = jc.Count
		if !slices.Contains(vm.States, jc.State) {
			// A state a newer River added: show it rather than hide its jobs.
			vm.States = append(vm.States, jc.State)
		}
	}
	failed, err := platform.FailedJobs(ctx, h.DB, failedJobsShown)
	if err != nil {
		return err
	}
	vm.Failed = failedJobVMs(failed)
	return handlers.Render(c, http.StatusOK, adminpages.AdminJobsPage(handlers.ViewCtx(c), vm))
}

// AdminOutbox is GET /admin/outbox?page=: the mail outbox, newest first.
func (h *Handler) AdminOutbox(c echo.Context) error {
	page := pageParam(c)
	mails, total, err := platform.OutboxPage(c.Request().Context(), h.DB, page, models.AdminPerPage)
	if err != nil {
		return err
	}
	vm := adminpages.AdminOutboxVM{Mails: mailVMs(mails), Pager: adminpages.NewPager(page, models.AdminPerPage, total, pageLinker(c, routenames.AdminOutbox, nil)),
		BaseURL: strings.TrimRight(h.Accounts.BaseURL, "/")}
	return handlers.Render(c, http.StatusOK, adminpages.AdminOutboxPage(handlers.ViewCtx(c), vm))
}
