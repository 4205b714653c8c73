package web_test

import (
	"cmp"
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"suanli/catalog"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
)

// labMember logs in a user who is a confirmed member of an approved lab
// (so they are shown student prices) and has a personal organisation; it
// returns the browser and both organisations' ids.
func labMember(t *testing.T, a *app, email string) (ac *actor, personal, lab int64) {
	t.Helper()
	ctx := context.Background()
	u := mustUser(t, a.db, email, "Wang Fang", false)
	orgs, err := a.db.OrgsOfUser(ctx, u.ID)
	must(t, err == nil && len(orgs) == 1, "the member's organisations: %v %v", orgs, err)
	now := a.db.Now().UTC()
	org := &models.Org{Kind: models.OrgLab, Name: "Vision Lab", Status: models.OrgApproved, Institution: "Peking University",
		Supervisor: "Prof. Zhang", EmailDomain: "pku.edu.cn", CreatedAt: now}
	err = a.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := models.InsertOrg(tx, org); err != nil {
			return err
		}
		return models.AddMember(tx, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleMember, EduEmail: email, ConfirmedAt: &now, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return loggedIn(a, "lab member", u), orgs[0].Org.ID, org.ID
}

// apiOffers reads every offer of a search through the API, as the actor.
func apiOffers(t *testing.T, ac *actor, q string) handlers.APIOfferList {
	t.Helper()
	res, body := ac.do("GET", "/api/v1/offers?per_page=200&"+q, nil)
	must(t, res.StatusCode == 200, "GET /api/v1/offers?%s: %d %s", q, res.StatusCode, snippet(body))
	return decode[handlers.APIOfferList](t, body)
}

// shownPrice matches the price a row of the offer list shows its reader
// (the first figure of the price cell).
var shownPrice = regexp.MustCompile(`<td class="(?:[^"]* )?price(?: [^"]*)?"[^>]*>\s*<strong[^>]*>([^<]+)</strong>`)

// pagePrices are the prices the offer list shows, in its order, in fen.
// monthlyCell is the offer table's monthly price cell (English page).
var monthlyCell = regexp.MustCompile(`<td class="n" data-label="¥/GPU·month">([^<]*)</td>`)

func pagePrices(t *testing.T, body string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range shownPrice.FindAllStringSubmatch(body, -1) {
		s := strings.NewReplacer("¥", "", ",", "").Replace(html.UnescapeString(m[1]))
		yuan, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
		y, err1 := strconv.ParseInt(yuan, 10, 64)
		f, err2 := strconv.ParseInt(frac+strings.Repeat("0", 2-len(frac)), 10, 64)
		must(t, err1 == nil && err2 == nil, "price %q is not yuan", m[1])
		out = append(out, y*100+f)
	}
	return out
}

// A lab member's offer list, datacentre page and API order by the price
// they are shown (the student price, each offer its own discount), and
// max_price keeps exactly the offers whose shown price is within it; for
// anyone else nothing changes. On both databases.
func TestStudentViewerSortsAndFiltersByTheirPrice(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		member, _, _ := labMember(t, a, "wang.fang@pku.edu.cn")
		other := loggedIn(a, "no lab", mustUser(t, a.db, "zhao@startup.example", "Zhao Lei", false))

		for _, c := range []struct {
			who     string
			ac      *actor
			student bool
		}{{"lab member", member, true}, {"anyone else", other, false}} {
			all := apiOffers(t, c.ac, "")
			must(t, all.Total == len(all.Offers) && all.Total > 20, "%s: %d offers of %d", c.who, len(all.Offers), all.Total)
			discounted := 0
			for _, o := range all.Offers {
				want := o.PricePerGPUHourFen
				if c.student {
					want = o.StudentPricePerGPUHourFen
				}
				must(t, o.YourPricePerGPUHourFen == want, "%s: offer %d: your price %d, want %d", c.who, o.ID, o.YourPricePerGPUHourFen, want)
				if o.YourPricePerGPUHourFen != o.PricePerGPUHourFen {
					discounted++
				}
			}
			must(t, !c.student || discounted > 5, "%s: only %d offers at a student price: a weak fixture", c.who, discounted)
			your := func(o handlers.APIOffer) int64 { return o.YourPricePerGPUHourFen }
			perTFLOP := func(o handlers.APIOffer) float64 {
				m, _ := catalog.GPUModelBySlug(o.GPU.Slug)
				return float64(your(o)) / m.TensorTFLOPS()
			}
			// The API's orders.
			byPrice := all.Offers
			if !slices.IsSortedFunc(byPrice, func(x, y handlers.APIOffer) int { return cmp.Compare(your(x), your(y)) }) {
				t.Errorf("%s: API sort=price is not in the order of your_price_per_gpu_hour_fen: %v", c.who, yourPrices(byPrice))
			}
			byTFLOP := apiOffers(t, c.ac, "sort=price_per_tflop").Offers
			if !slices.IsSortedFunc(byTFLOP, func(x, y handlers.APIOffer) int { return cmp.Compare(perTFLOP(x), perTFLOP(y)) }) {
				t.Errorf("%s: API sort=price_per_tflop is not in the order of your price per TFLOPS", c.who)
			}
			// max_price: exactly the offers whose price for the reader is within it.
			for _, bound := range []int64{2500, 3000, 4000} {
				var want []int64
				for _, o := range all.Offers {
					if your(o) <= bound {
						want = append(want, o.ID)
					}
				}
				got := apiOffers(t, c.ac, "max_price="+strconv.FormatInt(bound/100, 10))
				var ids []int64
				for _, o := range got.Offers {
					ids = append(ids, o.ID)
				}
				slices.Sort(ids)
				slices.Sort(want)
				must(t, got.Total == len(want) && slices.Equal(ids, want), "%s: max_price=%d: got %v (total %d), want %v", c.who, bound/100, ids, got.Total, want)
			}

			// The page shows the same prices, in the same order.
			body := c.ac.page(t, "/offers?sort=price", "en", http.StatusOK)
			shown := pagePrices(t, body)
			must(t, len(shown) == min(all.Total, 50), "%s: %d prices on the page, want %d", c.who, len(shown), min(all.Total, 50))
			if !slices.IsSorted(shown) {
				t.Errorf("%s: /offers?sort=price shows prices out of order: %v", c.who, shown)
			}
			if want := yourPrices(byPrice)[:len(shown)]; !slices.Equal(shown, want) {
				t.Errorf("%s: the page shows %v, the API says %v", c.who, shown, want)
			}
			// The monthly column is the viewer's price too (terms get the
			// student discount as hours do).
			var wantMonthly []string
			for _, o := range byPrice[:len(shown)] {
				switch {
				case o.MonthlyPricePerGPUFen == nil:
					wantMonthly = append(wantMonthly, "—")
				case c.student:
					wantMonthly = append(wantMonthly, views.YuanWhole(pricing.Discounted(*o.MonthlyPricePerGPUFen, o.StudentDiscountPct)))
				default:
					wantMonthly = append(wantMonthly, views.YuanWhole(*o.MonthlyPricePerGPUFen))
				}
			}
			var gotMonthly []string
			for _, m := range monthlyCell.FindAllStringSubmatch(body, -1) {
				gotMonthly = append(gotMonthly, strings.TrimSpace(html.UnescapeString(m[1])))
			}
			if !slices.Equal(gotMonthly, wantMonthly) {
				t.Errorf("%s: the monthly column shows %v, want %v", c.who, gotMonthly, wantMonthly)
			}
			body = c.ac.page(t, "/offers?sort=price&max_price=30", "en", http.StatusOK)
			for _, p := range pagePrices(t, body) {
				must(t, p <= 3000, "%s: max_price=30 shows %s", c.who, views.Yuan(p))
			}
			// A datacentre's offers too.
			var dc models.Datacenter
			must(t, a.db.R.Where("slug = ?", "cd-science-city").First(&dc).Error == nil, "find the datacentre")
			body = c.ac.page(t, a.url(routenames.DatacentersShow, dc.Slug), "en", http.StatusOK)
			if shown := pagePrices(t, body); len(shown) < 2 || !slices.IsSorted(shown) {
				t.Errorf("%s: the datacentre page shows prices out of order: %v", c.who, shown)
			}
		}
	})
}

func yourPrices(os []handlers.APIOffer) []int64 {
	out := make([]int64, len(os))
	for i, o := range os {
		out[i] = o.YourPricePerGPUHourFen
	}
	return out
}

// The TCO calculator compares buying with what the reader would pay to
// rent: a lab member's cheapest offers and figures are at their student
// prices, anyone else's at list prices.
func TestTCOComparesWithThePriceTheReaderPays(t *testing.T) {
	t.Parallel()
	a := newApp(t, dbtest.SQLite(t))
	member, _, _ := labMember(t, a, "wang.fang@pku.edu.cn")
	other := loggedIn(a, "no lab", mustUser(t, a.db, "zhao@startup.example", "Zhao Lei", false))
	// The calculator's defaults: 8 × A100 80GB, 30% of hours off-peak.
	cheapest := func(ac *actor, student bool) (onDemand, monthly int64) {
		var best int64 = -1
		for _, o := range apiOffers(t, ac, "gpu=a100-80g-sxm").Offers {
			if blended := o.YourPricePerGPUHourFen * int64(10000-30*o.OffpeakDiscountPct); best < 0 || blended < best {
				best, onDemand = blended, o.YourPricePerGPUHourFen
			}
			if o.MonthlyPricePerGPUFen == nil {
				continue
			}
			m := *o.MonthlyPricePerGPUFen
			if student {
				m = pricing.Discounted(m, o.StudentDiscountPct)
			}
			if monthly == 0 || m < monthly {
				monthly = m
			}
		}
		return onDemand, monthly
	}
	listOD, listMonthly := cheapest(other, false)
	studentOD, studentMonthly := cheapest(member, true)
	must(t, studentOD < listOD && studentMonthly < listMonthly, "a weak fixture: student ¥%d/¥%d against list ¥%d/¥%d", studentOD, studentMonthly, listOD, listMonthly)
	for _, c := range []struct {
		who           string
		ac            *actor
		od, monthly   int64
		says, saysNot string
	}{
		{"lab member", member, studentOD, studentMonthly, "at your student prices.", "list price"},
		{"anyone else", other, listOD, listMonthly, "at list prices.", "student price"},
	} {
		page := c.ac.page(t, a.url(routenames.TCO), "en", http.StatusOK)
		sources := between(page, `class="tco-sources"`, "</ul>")
		for _, want := range []string{views.Yuan(c.od) + "/GPU·h", views.Yuan(c.monthly) + "/GPU·month", c.says} {
			must(t, strings.Contains(sources, want), "%s: the rent sources do not say %q:\n%s", c.who, want, sources)
		}
		must(t, c.saysNot == "" || !strings.Contains(sources, c.saysNot), "%s: the sources say %q", c.who, c.saysNot)
	}
}

// A lab rental's switch / resize section lists the offers, and quotes the
// change, at the student prices the change would be billed at.
func TestRentalChangeShowsStudentPrices(t *testing.T) {
	t.Parallel()
	a := newApp(t, dbtest.SQLite(t))
	member, _, lab := labMember(t, a, "wang.fang@pku.edu.cn")
	cur := rtxOffer(t, a.db)
	var other models.Offer
	must(t, a.db.R.Where("datacenter_id = ? AND id <> ? AND status = ? AND student_discount_pct > 0", cur.DatacenterID, cur.ID, models.OfferListed).
		Order("id").First(&other).Error == nil, "no offer with a student discount beside the RTX 4090")
	id := mustRunningRental(t, a.db, lab, member.user.ID, cur)
	must(t, a.db.W.Model(&models.Rental{}).Where("id = ?", id).Update("student_pct", cur.StudentDiscountPct).Error == nil, "student rental")
	studentPrice := func(o models.Offer) string {
		return views.Yuan(pricing.Discounted(o.PricePerGPUHourFen, o.StudentDiscountPct)) + "/GPU·h"
	}
	option := func(body string, o models.Offer) string {
		return between(body, `<option value="`+idParam(o.ID)+`"`, "</option>")
	}

	body := member.page(t, a.url(routenames.RentalsShow, idParam(id)), "en", http.StatusOK)
	for _, o := range []models.Offer{cur, other} {
		must(t, strings.Contains(option(body, o), studentPrice(o)), "the option for offer %d does not say %s: %q", o.ID, studentPrice(o), option(body, o))
	}
	res, body := member.post(a.url(routenames.RentalsChange, idParam(id)), url.Values{"offer_id": {idParam(other.ID)}, "gpus": {"1"}})
	must(t, res.StatusCode == 200, "preview: %d\n%s", res.StatusCode, snippet(body))
	from, to := between(body, `id="change-from"`, "</td>"), between(body, `id="change-to"`, "</td>")
	must(t, strings.Contains(from, studentPrice(cur)), "the quote's now: %q, want %s", from, studentPrice(cur))
	must(t, strings.Contains(to, studentPrice(other)), "the quote's after: %q, want %s", to, studentPrice(other))
}
