package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/models"
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
