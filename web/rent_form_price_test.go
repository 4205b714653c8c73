package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
)

// demoOffer returns the demo offer of a GPU model in a datacentre.
func demoOffer(t *testing.T, db *models.DB, gpu, dc string) models.Offer {
	t.Helper()
	var o models.Offer
	if err := db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = ?)", gpu, dc).First(&o).Error; err != nil {
		t.Fatalf("demo %s in %s: %v", gpu, dc, err)
	}
	return o
}

// orgOptions are the rent form's organisation options: value, whether it
// is selected, and its text.
type orgOption struct {
	value    string
	selected bool
	text     string
}

var optionRe = regexp.MustCompile(`<option value="([0-9]+)"( selected)?>([^<]*)</option>`)

func orgOptions(t *testing.T, body string) []orgOption {
	t.Helper()
	i := strings.Index(body, `name="org_id"`)
	must(t, i >= 0, "no organisation selector on the rent form\n%s", snippet(body))
	j := strings.Index(body[i:], "</select>")
	var out []orgOption
	for _, m := range optionRe.FindAllStringSubmatch(body[i:i+j], -1) {
		out = append(out, orgOption{value: m[1], selected: m[2] != "", text: m[3]})
	}
	return out
}

func selectedOrg(opts []orgOption) string {
	for _, o := range opts {
		if o.selected {
			return o.value
		}
	}
	return ""
}

// The rent form starts with the organisation whose price the offer page
// showed: a lab member who was shown "your student price ¥28.40" pays from
// the lab, not from the personal organisation at ¥35.50. Each option says
// the offer's price per GPU-hour from it; an explicit choice is kept; the
// headline and the term prices follow the chosen organisation. On both
// databases, in both languages.
func TestRentFormStartsWithTheShownPrice(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		member, personal, lab := labMember(t, a, "li.na@pku.edu.cn")
		offer := demoOffer(t, a.db, "h100-sxm", "cd-science-city") // ¥35.50, student −20%
		rent := a.url(routenames.RentalsNew, idParam(offer.ID))

		page := member.page(t, a.url(routenames.OffersShow, idParam(offer.ID)), "zh-CN", http.StatusOK)
		contains(t, page, "¥28.40", "你的学生价")

		for _, lang := range []string{"zh-CN", "en"} {
			body := member.page(t, rent, lang, http.StatusOK)
			opts := orgOptions(t, body)
			must(t, len(opts) == 2, "%s: options %+v, want personal and the lab", lang, opts)
			must(t, selectedOrg(opts) == idParam(lab), "%s: the form starts with organisation %s, want the lab %d (whose price was shown); options %+v", lang, selectedOrg(opts), lab, opts)
			want := map[string][2]string{
				"zh-CN": {"个人账户 · ¥35.50/卡·时 · 余额", "Vision Lab · ¥28.40/卡·时 · 余额"},
				"en":    {"Personal · ¥35.50/GPU·h · balance", "Vision Lab · ¥28.40/GPU·h · balance"},
			}[lang]
			must(t, opts[0].value == idParam(personal) && strings.HasPrefix(opts[0].text, want[0]), "%s: personal option %q, want %q…", lang, opts[0].text, want[0])
			must(t, strings.HasPrefix(opts[1].text, want[1]), "%s: lab option %q, want %q…", lang, opts[1].text, want[1])
			headline := between(body, `id="rent-price"`, "</div>")
			must(t, strings.Contains(headline, "¥28.40") && strings.Contains(headline, "¥35.50"), "%s: headline %q, want ¥28.40 beside the struck ¥35.50", lang, headline)
			// The monthly term at the lab's price: ¥21,200 − 20%.
			contains(t, body, "¥16,960.00")
		}

		// An explicit choice is kept: the personal organisation at the list price.
		body := member.page(t, rent+"?org_id="+idParam(personal), "en", http.StatusOK)
		must(t, selectedOrg(orgOptions(t, body)) == idParam(personal), "explicit org_id: selected %s, want %d", selectedOrg(orgOptions(t, body)), personal)
		headline := between(body, `id="rent-price"`, "</div>")
		must(t, strings.Contains(headline, "¥35.50") && !strings.Contains(headline, "¥28.40"), "personal: headline %q, want ¥35.50 alone", headline)
		must(t, !strings.Contains(body, "Student price −20%"), "personal: the quote applies the student discount")
		// The htmx price fragment follows the chosen organisation.
		_, frag := member.do("GET", rent+"?org_id="+idParam(lab)+"&gpus=1&term=on_demand&sla=standard", nil, "HX-Request", "true")
		must(t, strings.Contains(frag, "Student price −20%"), "the lab's quote lacks the student discount: %s", snippet(frag))
		// An org_id that is not theirs falls back to the shown price.
		body = member.page(t, rent+"?org_id=999999", "en", http.StatusOK)
		must(t, selectedOrg(orgOptions(t, body)) == idParam(lab), "unknown org_id: selected %s, want the lab", selectedOrg(orgOptions(t, body)))

		// An offer without a student price: both organisations pay the list
		// price, which is what was shown; the form starts with the first.
		plain := demoOffer(t, a.db, "h100-sxm", "cd-hitech")
		body = member.page(t, a.url(routenames.RentalsNew, idParam(plain.ID)), "en", http.StatusOK)
		opts := orgOptions(t, body)
		must(t, selectedOrg(opts) == idParam(personal), "no student discount: selected %s, want personal", selectedOrg(opts))
		must(t, strings.Contains(opts[0].text, "¥33.20/GPU·h") && strings.Contains(opts[1].text, "¥33.20/GPU·h"), "no student discount: options %+v", opts)

		// Someone in no lab: the personal organisation at the list price.
		other := loggedIn(a, "no lab", mustUser(t, a.db, "chen@startup.example", "Chen Jie", false))
		opts = orgOptions(t, other.page(t, rent, "en", http.StatusOK))
		must(t, len(opts) == 1 && opts[0].selected && strings.Contains(opts[0].text, "¥35.50/GPU·h"), "no lab: options %+v", opts)
	})
}

// between returns the text of s from the first from to the next to after it.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}

// Before paying for a week or month term the renter is told that stopping
// early refunds nothing: on the rent form (its rules and its price), in
// the offer page's quote panel and in the quote API, in both languages.
// On demand none of that is said; the API says billing ends at the stop.
func TestTermsSayStoppingEarlyRefundsNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		offer := demoOffer(t, a.db, "h100-sxm", "cd-science-city")
		renter := loggedIn(a, "renter", mustUser(t, a.db, "sun@startup.example", "Sun Li", false))
		says := map[string]string{
			"en":    "Stopping a weekly or monthly term early refunds nothing",
			"zh-CN": "包周、包月提前停止不退款",
		}
		onDemand := map[string]string{"en": "Stopping ends billing at that second", "zh-CN": "停止即结束计费"}
		for _, lang := range []string{"zh-CN", "en"} {
			for _, term := range []string{"week", "month", "on_demand"} {
				isTerm := term != "on_demand"
				// The rent form: the price panel for the term, and its rules.
				body := renter.page(t, a.url(routenames.RentalsNew, idParam(offer.ID))+"?term="+term, lang, http.StatusOK)
				quote := between(body, `id="rent-quote"`, "</ul>")
				must(t, strings.Contains(quote, says[lang]) == isTerm, "%s %s: the rent form's price says %q: %v, want %v\n%s", lang, term, says[lang], !isTerm, isTerm, quote)
				rules := between(body, `id="rent-rules"`, "</ul>")
				must(t, strings.Contains(rules, says[lang]), "%s %s: the rent form's rules do not say %q\n%s", lang, term, says[lang], rules)
				// The htmx price fragment says it too.
				_, frag := renter.do("GET", a.url(routenames.RentalsNew, idParam(offer.ID))+"?gpus=1&sla=standard&term="+term, nil, "HX-Request", "true", "Accept-Language", lang)
				must(t, strings.Contains(frag, says[lang]) == isTerm, "%s %s: the price fragment: %s", lang, term, snippet(frag))

				// The offer page's quote panel.
				page := renter.page(t, a.url(routenames.OffersShow, idParam(offer.ID))+"?gpus=2&term="+term, lang, http.StatusOK)
				panel := between(page, `id="quote-result"`, "</ul>")
				must(t, strings.Contains(panel, says[lang]) == isTerm, "%s %s: the quote panel: %q", lang, term, panel)

				// The quote API: the breakdown's fields are all still there,
				// plus the refund and the sentence.
				res, js := renter.do("GET", a.url(routenames.APIOffersQuote, offer.ID)+query("gpus", "2", "term", term), nil, "Accept-Language", lang)
				must(t, res.StatusCode == 200, "%s %s: quote %d %s", lang, term, res.StatusCode, js)
				var q map[string]any
				must(t, json.Unmarshal([]byte(js), &q) == nil, "quote JSON %s", js)
				_, hasTotal := q["total_fen"]
				refund, hasRefund := q["early_stop_refund_fen"]
				note, _ := q["early_stop"].(string)
				must(t, hasTotal && hasRefund, "%s %s: quote %s lacks total_fen or early_stop_refund_fen", lang, term, js)
				if isTerm {
					must(t, refund == float64(0) && strings.Contains(note, says[lang]), "%s %s: refund %v, note %q", lang, term, refund, note)
				} else {
					must(t, refund == nil && strings.Contains(note, onDemand[lang]), "%s %s: refund %v, note %q", lang, term, refund, note)
				}
			}
		}
	})
}

// yuanFen reads "¥1,234.56" as fen.
func yuanFen(t *testing.T, s string) int64 {
	t.Helper()
	v, ok := pricing.ParseYuan(strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "¥"), ",", ""))
	must(t, ok, "not an amount in yuan: %q", s)
	return v
}

var yuanRe = regexp.MustCompile(`¥[0-9,]+\.[0-9]{2}`)

// Quotes include the new volume's storage, at the offer's price per GB
// and 30 days (¥0.30 for the demo offers), shown per hour and per day
// beside the GPUs' price, with the total: on the rent form and its htmx
// fragment (which follows the volume size, and adds nothing for an
// existing volume, billed already), on the offer page's quote panel and
// in the quote API. On both databases, in both languages; to the fen.
func TestQuotesIncludeTheVolumesStorage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		offer := demoOffer(t, a.db, "h100-sxm", "cd-science-city") // ¥35.50, ¥21,200 a month, 4000 GB of disk
		must(t, offer.StoragePricePerGBMonthFen == 30, "the demo offer's storage price is %d fen per GB-month, want 30", offer.StoragePricePerGBMonthFen)
		renter := loggedIn(a, "renter", mustUser(t, a.db, "he@startup.example", "He Yu", false))
		rent := a.url(routenames.RentalsNew, idParam(offer.ID))
		lines := map[string]map[string]string{
			// 50 GB (the default): 1500 fen per 30 days, 50 a day, 2.08 → 2 an hour.
			"50": {"en": "Storage, 50 GB volume: ¥0.02/h · ¥0.50/day; ¥0.02 for this period",
				"zh-CN": "存储（50 GB 数据盘）：¥0.02/时 · ¥0.50/天；本期 ¥0.02"},
			// 200 GB: 6000 fen per 30 days, 200 a day, 8.33 → 8 an hour.
			"200": {"en": "Storage, 200 GB volume: ¥0.08/h · ¥2.00/day; ¥0.08 for this period",
				"zh-CN": "存储（200 GB 数据盘）：¥0.08/时 · ¥2.00/天；本期 ¥0.08"},
			// A month of 200 GB: ¥60.00.
			"200 month": {"en": "Storage, 200 GB volume: ¥0.08/h · ¥2.00/day; ¥60.00 for this period",
				"zh-CN": "存储（200 GB 数据盘）：¥0.08/时 · ¥2.00/天；本期 ¥60.00"},
			"existing": {"en": "Storage: the volume you mount is billed already; nothing is added.", "zh-CN": "存储：所挂载的数据盘已在计费，不另加收。"},
		}
		gpuWord := map[string]string{"en": "GPUs: ", "zh-CN": "GPU："}
		// checkQuote finds the storage line in a quote, and the GPU line
		// beside it, and checks that the total is both.
		checkQuote := func(what, lang, quote, totalID, want string, storageFen int64) {
			t.Helper()
			must(t, strings.Contains(quote, want), "%s %s: the quote lacks %q\n%s", lang, what, want, quote)
			total := yuanFen(t, yuanRe.FindString(between(quote, `id="`+totalID+`"`, "</strong>")))
			if storageFen == 0 {
				must(t, !strings.Contains(quote, gpuWord[lang]), "%s %s: a GPU line without storage\n%s", lang, what, quote)
				return
			}
			gpu := yuanFen(t, yuanRe.FindString(between(quote, gpuWord[lang], "</li>")))
			must(t, total == gpu+storageFen, "%s %s: total %d fen, want the GPUs' %d + storage %d", lang, what, total, gpu, storageFen)
		}
		for _, lang := range []string{"zh-CN", "en"} {
			// The rent form starts with the default 50 GB volume.
			body := renter.page(t, rent, lang, http.StatusOK)
			checkQuote("rent form", lang, between(body, `id="rent-quote"`, "</ul>"), "rent-total", lines["50"][lang], 2)
			// Its price fragment follows the volume's size and term…
			_, frag := renter.do("GET", rent+"?gpus=1&term=on_demand&sla=standard&volume_gb=200", nil, "HX-Request", "true", "Accept-Language", lang)
			checkQuote("fragment, 200 GB", lang, frag, "rent-total", lines["200"][lang], 8)
			_, frag = renter.do("GET", rent+"?gpus=1&term=month&sla=standard&volume_gb=200", nil, "HX-Request", "true", "Accept-Language", lang)
			checkQuote("fragment, a month of 200 GB", lang, frag, "rent-total", lines["200 month"][lang], 6000)
			must(t, yuanFen(t, yuanRe.FindString(between(frag, `id="rent-total"`, "</strong>"))) == 2120000+6000, "%s: a month with 200 GB: %s", lang, snippet(frag))
			// …and adds nothing for an existing volume (billed already).
			_, frag = renter.do("GET", rent+"?gpus=1&term=on_demand&sla=standard&volume_gb=200&volume_id=7", nil, "HX-Request", "true", "Accept-Language", lang)
			checkQuote("fragment, an existing volume", lang, frag, "rent-total", lines["existing"][lang], 0)
			// A size beyond the offer's disk is explained beside the field.
			body = renter.page(t, rent+"?volume_gb=4001", lang, http.StatusOK)
			must(t, strings.Contains(between(body, `id="err-volume_gb"`, "</small>"), "4000"), "%s: volume_gb=4001: %s", lang, between(body, `id="err-volume_gb"`, "</small>"))

			// The offer page's quote panel: the volume's size is a field.
			page := renter.page(t, a.url(routenames.OffersShow, idParam(offer.ID))+"?gpus=1&hours=1", lang, http.StatusOK)
			must(t, strings.Contains(page, `name="volume_gb"`) && strings.Contains(page, `value="50"`), "%s: the quote panel has no volume field", lang)
			checkQuote("offer page", lang, between(page, `id="quote-result"`, "</ul>"), "quote-total", lines["50"][lang], 2)
			page = renter.page(t, a.url(routenames.OffersShow, idParam(offer.ID))+"?gpus=1&term=month&volume_gb=200", lang, http.StatusOK)
			checkQuote("offer page, a month of 200 GB", lang, between(page, `id="quote-result"`, "</ul>"), "quote-total", lines["200 month"][lang], 6000)
			// Its Rent button carries the size to the rent form.
			must(t, strings.Contains(page, "volume_gb=200"), "%s: the Rent link drops the volume size", lang)
		}

		// The API: the same fields, to the fen.
		for _, c := range []struct {
			query                          string
			gb                             int
			hour, day, storage, gpu, total int64
		}{
			{query("gpus", "1", "term", "month"), 50, 2, 50, 1500, 2120000, 2121500},
			{query("gpus", "2", "term", "month", "volume_gb", "200"), 200, 8, 200, 6000, 4240000, 4246000},
			{query("gpus", "2", "term", "month", "volume_id", "7"), 0, 0, 0, 0, 4240000, 4240000},
		} {
			res, js := renter.do("GET", a.url(routenames.APIOffersQuote, offer.ID)+c.query, nil)
			must(t, res.StatusCode == 200, "quote %s: %d %s", c.query, res.StatusCode, js)
			var q pricing.Breakdown
			must(t, json.Unmarshal([]byte(js), &q) == nil, "quote JSON %s", js)
			must(t, q.VolumeGB == c.gb && q.StoragePerHourFen == c.hour && q.StoragePerDayFen == c.day && q.StorageFen == c.storage && q.GPUFen == c.gpu && q.TotalFen == c.total,
				"quote %s: %s; want %d GB, %d/h, %d/day, storage %d, GPUs %d, total %d", c.query, js, c.gb, c.hour, c.day, c.storage, c.gpu, c.total)
			must(t, (c.gb > 0) == (q.StoragePricePerGBMonthFen == 30), "quote %s: storage price %d", c.query, q.StoragePricePerGBMonthFen)
		}
	})
}
