package web_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/interruptions"
	"suanli/models"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views/bidviews"
	"suanli/workers"
)

// marketApp is the real router whose rentals are provisioned for real and
// whose market passes run: interrupted rentals resume when GPUs come free
// (and, as a net, every second), as `serve` wires them.
func marketApp(t *testing.T, db *models.DB) (*app, *rentals.Service) {
	t.Helper()
	var svc *rentals.Service
	a := newAppWith(t, db, func(h *handlers.Handler) {
		svc = h.Rentals
		resume := &interruptions.Service{Rentals: h.Rentals}
		q, err := workers.New(h.DB, workers.Options{Work: true, Rentals: h.Rentals, FetchPoll: 50 * time.Millisecond,
			AvailabilityEvery: time.Hour, MeterEvery: time.Hour, MarketEvery: time.Second,
			Market: []workers.MarketPass{{Name: "resume_interrupted", Run: func(ctx context.Context) error {
				_, err := resume.Pass(ctx)
				return err
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Rentals.Jobs = q
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = q.Stop(ctx)
		})
	})
	return a, svc
}

// waitRentalStatus waits, with a deadline, until the rental's status in
// the database is want (read there, not through the API, whose per-token
// rate limit a poll could trip).
func waitRentalStatus(t *testing.T, a *app, id int64, want models.RentalStatus) {
	t.Helper()
	dockertest.Eventually(t, 60*time.Second, fmt.Sprintf("rental %d to be %s", id, want), func() (bool, string) {
		r, err := a.db.RentalByID(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return r.Status == want, string(r.Status)
	})
}

// TestBrowserBidInterruptedAndResumed is the journey of an interruptible
// rental in real Chromium, against a simulated node agent: a renter bids
// for all four GPUs of a node on the rent form (the term chosen by the
// offer's link, the bid prefilled with the clearing price, the rules
// stated) and watches the rental run; an on-demand renter takes a GPU
// through the API; the bid rental's page shows it interrupted, when and
// why, and that it resumes by itself; the on-demand rental runs and
// stops; the market pass resumes the bid rental, with new checks, and its
// page shows it running again.
func TestBrowserBidInterruptedAndResumed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t) // skip (or fail under CI) before setting anything up
	a, svc := marketApp(t, dbtest.SQLite(t))
	o := bidOffer(t, a)
	startSimulatedAgent(t, a, svc, o.NodeID)
	const (
		email    = "han.meimei@example.com"
		password = "spot-gpu-chengdu-2026"
	)
	fundedRenter(t, a.db, email, password, 100_000)
	_, odToken := apiToken(t, a, "on-demand@example.com")
	_, bidderToken := apiTokenOf(t, a, email)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx)

	// (1) The offer's interruptible link, through the login page.
	rentPath := a.url(routenames.RentalsNew, idParam(o.ID)) + "?term=interruptible"
	open(t, b, a.srv.URL+"/login?next="+rentPath, "login page")
	typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", password}})
	p := click(t, b, "#login-submit", "log in")
	must(t, p.Path == rentPath, "after logging in: %s, want %s\n%s", p.Path, rentPath, p)
	must(t, eval[bool](t, b, `document.getElementById("f-term-interruptible").checked`), "?term=interruptible did not choose the interruptible term")
	floor := bidviews.YuanValue(*o.InterruptibleFloorPerGPUHourFen)
	must(t, eval[string](t, b, `document.getElementById("f-bid").value`) == floor, "the bid starts at %q, want the clearing price %s",
		eval[string](t, b, `document.getElementById("f-bid").value`), floor)
	rules := textOf(t, b, "#rent-bid-rules")
	t.Logf("rules: %q", rules)
	must(t, strings.Contains(rules, "30 seconds") && strings.Contains(rules, "/workspace") && strings.Contains(rules, "resumes by itself"),
		"the rent form's rules = %q", rules)

	// (2) All four GPUs on a bid a fen above the floor.
	bid := *o.InterruptibleFloorPerGPUHourFen + 1
	typeInto(t, b, [][2]string{{"f-gpus", "4"}, {"f-bid", bidviews.YuanValue(bid)}})
	if err := chromedp.Do(b, chromedp.SendKeys(chromedp.ID("f-ssh_public_key"), testSSHKey(t))); err != nil {
		t.Fatalf("type the SSH key: %v\n%s", err, readPage(t, b))
	}
	waitHTMXIdle(t, b)
	rentalShot(t, b, "bid-form-en")
	p = click(t, b, "#rent-submit", "rent on a bid")
	m := regexp.MustCompile(`^/rentals/(\d+)$`).FindStringSubmatch(p.Path)
	must(t, m != nil, "renting landed on %s, want /rentals/<id>\n%s", p.Path, p)
	id, _ := strconv.ParseInt(m[1], 10, 64)
	must(t, strings.Contains(textOf(t, b, "#rental-bid-amount"), bidviews.YuanValue(bid)), "the bid section shows %q", textOf(t, b, "#rental-bid-amount"))
	waitFor(t, b, rentalStatusIs("running"), "the bid rental to run")
	rentalShot(t, b, "bid-running-en")

	// (3) An on-demand renter takes a GPU: none is free, so the bid gives way.
	st, _, body, err := idemPost(a, "/api/v1/rentals", odToken, "", `{"offer_id":`+idParam(o.ID)+`,"gpus":1,"ssh_public_key":"`+testSSHKey(t)+`"}`)
	must(t, err == nil && st == http.StatusCreated, "the on-demand rent: %d %s (%v)", st, body, err)
	od := decode[rentaljson.Rental](t, body)

	// (4) The bid rental's page follows it: interrupted, when and why.
	waitFor(t, b, rentalStatusIs("interrupted"), "the bid rental's page to show it interrupted")
	notice := textOf(t, b, "#rental-interrupted")
	t.Logf("interrupted: %q", notice)
	must(t, strings.Contains(notice, "Interrupted at") && strings.Contains(notice, "Reason: an on-demand rental took its GPUs") &&
		strings.Contains(notice, "resumes by itself"), "the interruption notice = %q", notice)
	must(t, textOf(t, b, "#rental-live [data-status]") == "Interrupted", "status chip = %q", textOf(t, b, "#rental-live [data-status]"))
	must(t, eval[bool](t, b, `!!document.getElementById("rental-start") && !!document.getElementById("rental-stop")`),
		"an interrupted rental offers no Resume now and Stop")
	must(t, !eval[bool](t, b, `!!document.getElementById("access-command")`), "an interrupted rental shows an access command: it holds no GPUs")
	rentalShot(t, b, "bid-interrupted-en")

	// (5) The on-demand rental runs (after the interrupted container's
	// stop), then stops: its GPU is free again.
	waitRentalStatus(t, a, od.ID, models.RentalRunning)
	must(t, rentalJSON(t, a, bidderToken, id).Status == "interrupted", "the bid rental resumed while the on-demand one runs")
	st, _, body = apiCall(a, odToken, "POST", a.url(routenames.APIRentalsStop, idParam(od.ID)), "")
	must(t, st == http.StatusOK, "stop the on-demand rental: %d %s", st, body)

	// (6) The market pass resumes the bid rental, with new checks.
	waitFor(t, b, rentalStatusIs("running"), "the bid rental to resume")
	p = readPage(t, b)
	t.Logf("resumed: %q", textOf(t, b, "#rental-live"))
	must(t, strings.Contains(p.Text, "Last interrupted") && strings.Contains(p.Text, "an on-demand rental took its GPUs"),
		"the resumed rental's page does not say what happened last\n%s", p)
	r := rentalJSON(t, a, bidderToken, id)
	must(t, r.Status == "running" && len(r.GPUUUIDs) == 4 && r.Checks != nil && r.Checks.At.After(r.Interruption.At),
		"the resumed rental: %s with %d GPUs, checks %+v after %v", r.Status, len(r.GPUUUIDs), r.Checks, r.Interruption.At)
	rentalShot(t, b, "bid-resumed-en")
}

// apiTokenOf is an API token of the existing user with email.
func apiTokenOf(t *testing.T, a *app, email string) (*models.User, string) {
	t.Helper()
	u, err := a.db.UserByEmail(context.Background(), email)
	must(t, err == nil, "user %s: %v", email, err)
	token, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(context.Background(), u, "bids")
	must(t, err == nil, "token: %v", err)
	return u, token
}
