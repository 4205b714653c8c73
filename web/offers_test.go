package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/pricing"
)

type apiList struct {
	Offers []handlers.APIOffer `json:"offers"`
	Total  int                 `json:"total"`
	Page   int                 `json:"page"`
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// The journey of the issue: the cheapest H100s within 10 ms of Chengdu,
// through the real router on both databases.
func TestCheapestH100NearChengdu(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		res, body := a.get("/api/v1/offers" + query("gpu", "h100-sxm", "from", "chengdu", "max_latency_ms", "10", "sort", "price"))
		must(t, res.StatusCode == 200, "status %d: %s", res.StatusCode, body)
		l := decode[apiList](t, body)
		// Demo: Chongqing (9 ms) at ¥32.60 and three Chengdu H100 SXM offers (3 ms).
		must(t, l.Total == 4, "total %d, want 4", l.Total)
		prev := int64(0)
		for _, o := range l.Offers {
			if o.GPU.Slug != "h100-sxm" || o.LatencyMS["chengdu"] > 10 {
				t.Errorf("offer %d does not match: %+v", o.ID, o)
			}
			if o.PricePerGPUHourFen < prev {
				t.Errorf("not sorted by price")
			}
			prev = o.PricePerGPUHourFen
		}
		first := l.Offers[0]
		must(t, first.Datacenter.City == "chongqing" && first.PricePerGPUHourFen == 3260, "cheapest: %+v", first)
		must(t, first.GPU.VRAMGB == 80 && first.GPU.MemBWGBps == 3350 && first.GPU.BF16TFLOPS == 989, "specs %+v", first.GPU)
		must(t, first.GPUs == 8 && first.Interconnect != "" && first.MonthlyPricePerGPUFen != nil, "offer %+v", first)

		// The page shows the same offers, cheapest first, with prices.
		res, page := a.get("/offers"+query("gpu", "h100-sxm", "from", "chengdu", "max_latency_ms", "10"), "Accept-Language", "en")
		must(t, res.StatusCode == 200, "page status %d", res.StatusCode)
		contains(t, page, "4 offers", "¥32.60", "¥19,500", "9 ms", "Chongqing Liangjiang DC", "Liangjiang New Area")
		if strings.Index(page, "¥32.60") > strings.Index(page, "¥33.20") {
			t.Error("page not sorted by price")
		}
	})
}

func TestOfferListLanguageAndFragment(t *testing.T) {
	a := newSQLiteApp(t)
	_, zh := a.get("/offers")
	contains(t, zh, `lang="zh-CN"`, "43 个报价", "GPU 算力报价", "演示")
	_, en := a.get("/offers", "Accept-Language", "en-GB,en;q=0.9")
	contains(t, en, `lang="en"`, "43 offers", "GPU offers")

	// The switch sticks: a cookie beats Accept-Language.
	res, _ := a.get("/lang/en?next=" + "/offers%3Fgpu%3Dl40s")
	must(t, res.StatusCode == http.StatusSeeOther, "switch status %d", res.StatusCode)
	must(t, res.Header.Get("Location") == "/offers?gpu=l40s", "back to %q", res.Header.Get("Location"))
	_, page := a.get("/offers", "Accept-Language", "zh-CN")
	contains(t, page, `lang="en"`, "43 offers")
	res, _ = a.get("/lang/en?next=//evil.example/x")
	must(t, res.Header.Get("Location") == "/", "open redirect: %q", res.Header.Get("Location"))
	res, _ = a.get("/lang/fr")
	must(t, res.StatusCode == 404, "unknown language: %d", res.StatusCode)

	// htmx asks for the results fragment only, with field errors out of band.
	res, frag := a.get("/offers?gpu=l40s", "HX-Request", "true")
	must(t, res.StatusCode == 200, "fragment status %d", res.StatusCode)
	must(t, strings.HasPrefix(strings.TrimSpace(frag), `<section id="results"`), "fragment starts %q", frag[:min(80, len(frag))])
	must(t, !strings.Contains(frag, "<html"), "fragment has the layout")
	contains(t, frag, `id="err-min_gpus" role="alert" hx-swap-oob="true"`)
	// The fragment sends the language switch again for the URL as it is now.
	contains(t, frag, `id="lang-switch"`, `next=%2Foffers%3Fgpu%3Dl40s`)
	vary := strings.Join(res.Header.Values("Vary"), ", ")
	must(t, strings.Contains(vary, "HX-Request") && strings.Contains(vary, "Accept-Language"), "Vary %q", vary)
}

// Bad filter values never yield a 500: the page explains beside the field
// and ignores the value; the API answers 400 naming the parameter.
func TestBadFilterValues(t *testing.T) {
	a := newSQLiteApp(t)
	cases := []struct {
		param, value, pageMsg string
	}{
		{"min_gpus", "abc", "Enter a whole number from 1 to 64"},
		{"gpu", "rtx-9999", `Unknown GPU model &#34;rtx-9999&#34;`},
		{"max_price", "-5", "Enter an amount in yuan above 0"},
		{"max_price", "1e9", "Enter an amount in yuan above 0"},
		{"min_vram_gb", "99999999999999999999", "Enter a whole number"},
		{"city", "atlantis", "Unknown city"},
		{"max_latency_ms", "NaN", "Enter milliseconds"},
		{"sort", "random", "Unknown sort"},
		{"available", "maybe", "Must be 1 or 0"},
		{"page", "0", "Enter a whole number"},
		{"page", "99", "There is no page 99"},
	}
	for _, c := range cases {
		t.Run(c.param+"="+c.value, func(t *testing.T) {
			res, page := a.get("/offers"+query(c.param, c.value), "Accept-Language", "en")
			must(t, res.StatusCode == 200, "page status %d", res.StatusCode)
			contains(t, page, c.pageMsg, `id="err-`+c.param+`"`, "43 offers")

			res, body := a.get("/api/v1/offers" + query(c.param, c.value))
			must(t, res.StatusCode == 400, "api status %d: %s", res.StatusCode, body)
			e := decode[handlers.JSONError](t, body)
			must(t, e.Error.Code == "invalid" && e.Error.Param == c.param && e.Error.Message != "", "api error %+v", e)
		})
	}
	res, body := a.get("/api/v1/offers?per_page=201")
	must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"per_page"`), "per_page 201: %d %s", res.StatusCode, body)
	// The page keeps the valid filters when another is bad.
	_, page := a.get("/offers"+query("gpu", "h100-sxm", "min_gpus", "x"), "Accept-Language", "en")
	contains(t, page, "8 offers", `value="x"`)
}

func TestPaginationAndPerPage(t *testing.T) {
	a := newSQLiteApp(t)
	_, body := a.get("/api/v1/offers?per_page=10&page=5")
	l := decode[apiList](t, body)
	must(t, l.Total == 43 && l.Page == 5 && len(l.Offers) == 3, "page 5 of 10: total %d page %d n %d", l.Total, l.Page, len(l.Offers))
	_, body = a.get("/api/v1/offers?per_page=200")
	must(t, len(decode[apiList](t, body).Offers) == 43, "per_page 200")
	res, _ := a.get("/api/v1/offers?per_page=10&page=6")
	must(t, res.StatusCode == 400, "page past the end: %d", res.StatusCode)
}

func TestEmptyResultOffersRelaxations(t *testing.T) {
	a := newSQLiteApp(t)
	// No B200 within 5 ms of Chengdu: the only B200 is in Frankfurt (230 ms).
	_, page := a.get("/offers"+query("gpu", "b200", "from", "chengdu", "max_latency_ms", "5"), "Accept-Language", "en")
	contains(t, page, "No offers match", "1 more offer if you allow 230 ms", "without the GPU model filter")
	must(t, strings.Contains(page, "max_latency_ms=230"), "relaxation link missing")
	// The latency relaxation names the real count it brings back.
	_, body := a.get("/api/v1/offers" + query("gpu", "b200", "from", "chengdu", "max_latency_ms", "230"))
	must(t, decode[apiList](t, body).Total == 1, "relaxed query")
}

func TestOfferAndDatacenterPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		var o models.Offer
		must(t, db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-tianfu-swpark')", "h100-sxm").First(&o).Error == nil, "find offer")
		res, page := a.get(a.url("offers.show", o.ID), "Accept-Language", "en")
		must(t, res.StatusCode == 200, "offer status %d", res.StatusCode)
		contains(t, page, "H100 SXM5 × 8", "NVIDIA H100 datasheet", "¥34.00", "¥27.20", "¥30.60", "¥24.48", "¥20,500", "¥5,535",
			"Chengdu Tianfu Software Park DC", "Tianfu Software Park", "Beijing", "36 ms", "demo data")
		_, zh := a.get(a.url("offers.show", o.ID))
		contains(t, zh, "成都天府软件园机房", "天府软件园", "/卡·时", "包月", "标称值来源（原文）")

		_, api := a.get(a.url("api.offers.show", o.ID))
		got := decode[handlers.APIOffer](t, api)
		must(t, got.ID == o.ID && got.Datacenter.District == "Tianfu Software Park" && got.LatencyMS["chengdu"] == 3, "api offer %+v", got)

		for _, p := range []string{"/offers/999999", "/offers/abc", "/offers/-1", "/datacenters/nowhere", "/no/such/page"} {
			res, body := a.get(p)
			must(t, res.StatusCode == 404, "%s: status %d", p, res.StatusCode)
			contains(t, body, "页面不存在")
		}
		res, body := a.get("/api/v1/offers/abc")
		must(t, res.StatusCode == 404 && strings.Contains(body, `"code":"not_found"`), "api 404: %d %s", res.StatusCode, body)

		res, page = a.get(a.url("datacenters.show", "cd-science-city"), "Accept-Language", "en")
		must(t, res.StatusCode == 200, "dc status %d", res.StatusCode)
		contains(t, page, "Chengdu Science City DC", "Tier IV", "200 Gbps", "Offers in this datacentre (5)", "H200 SXM")
	})
}

// A GET form sends empty fields; the shareable URL drops them.
func TestEmptyParametersLeaveTheURL(t *testing.T) {
	a := newSQLiteApp(t)
	res, _ := a.get("/offers?gpu=h100-sxm&city=&min_gpus=&sort=price")
	must(t, res.StatusCode == http.StatusSeeOther, "status %d", res.StatusCode)
	must(t, res.Header.Get("Location") == "/offers?gpu=h100-sxm&sort=price", "location %q", res.Header.Get("Location"))
	res, frag := a.get("/offers?gpu=h100-sxm&city=&min_gpus=", "HX-Request", "true")
	must(t, res.StatusCode == 200 && res.Header.Get("HX-Push-Url") == "/offers?gpu=h100-sxm", "htmx: %d push %q", res.StatusCode, res.Header.Get("HX-Push-Url"))
	contains(t, frag, "next=%2Foffers%3Fgpu%3Dh100-sxm\"")
}

// The quote API and the offer page's quote panel give the same breakdown;
// a verified lab member's quote carries the student discount.
func TestQuoteAPIAndPanel(t *testing.T) {
	a := newSQLiteApp(t)
	var o models.Offer
	must(t, a.db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-science-city')", "h100-sxm").First(&o).Error == nil, "find offer")
	// Tuesday 2026-12-01 21:00 Shanghai for 2 h: 1 h peak, 1 h off-peak (10% off), 2 GPUs.
	res, body := a.get(a.url("api.offers.quote", o.ID) + query("gpus", "2", "start", "2026-12-01T21:00:00+08:00", "seconds", "7200"))
	must(t, res.StatusCode == 200, "quote %d %s", res.StatusCode, body)
	q := decode[pricing.Breakdown](t, body)
	// 2 × (3550 + 3550 × 0.9) = 7100 + 6390 = 13490.
	must(t, q.TotalFen == 13490 && q.PeakSeconds == 3600 && q.OffpeakSeconds == 3600 && q.Currency == "cny", "breakdown %+v", q)
	must(t, len(q.Discounts) == 1 && q.Discounts[0].Kind == "offpeak" && q.Discounts[0].Pct == 10, "discounts %+v", q.Discounts)
	must(t, q.SLATier == "standard" && q.SLASurchargeFen == 0, "default SLA %+v", q)

	res, body = a.get(a.url("api.offers.quote", o.ID) + query("term", "month", "gpus", "8", "sla", "premium"))
	q = decode[pricing.Breakdown](t, body)
	// 8 × ¥21,200 × 1.15 = ¥195,040.
	must(t, res.StatusCode == 200 && q.TotalFen == 19504000, "month premium %d %+v", res.StatusCode, q)

	for _, bad := range [][2]string{{"gpus", "9"}, {"gpus", "x"}, {"start", "yesterday"}, {"seconds", "-1"}, {"term", "year"}, {"sla", "gold"}} {
		res, body := a.get(a.url("api.offers.quote", o.ID) + query(bad[0], bad[1]))
		must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"`+bad[0]+`"`), "%s=%s: %d %s", bad[0], bad[1], res.StatusCode, body)
	}
	res, _ = a.get(a.url("api.offers.quote", 999999))
	must(t, res.StatusCode == 404, "unknown offer: %d", res.StatusCode)

	// The panel: the same figures on the page, and as a fragment for htmx.
	page := a.url("offers.show", o.ID) + query("gpus", "2", "start", "2026-12-01T21:00", "hours", "2")
	res, html := a.get(page, "Accept-Language", "en")
	must(t, res.StatusCode == 200, "page %d", res.StatusCode)
	contains(t, html, `id="quote-total">¥134.90<`, "1 h at the off-peak rate", "1 h at the peak rate", "Off-peak discount −10%")
	res, frag := a.get(page, "HX-Request", "true", "Accept-Language", "en")
	must(t, res.StatusCode == 200 && strings.HasPrefix(strings.TrimSpace(frag), `<div id="quote-result"`), "fragment %q", frag[:min(60, len(frag))])
	res, html = a.get(a.url("offers.show", o.ID)+query("gpus", "99"), "Accept-Language", "en")
	must(t, res.StatusCode == 200, "bad gpus: %d", res.StatusCode)
	contains(t, html, "Enter 1 to 8", `id="qerr-gpus"`)
}

// Message formatting never leaks fmt's error markers into a page.
func TestNoFormattingErrorsOnPages(t *testing.T) {
	a := newSQLiteApp(t)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, p := range []string{"/offers", "/offers/1", "/offers/1?gpus=99", "/datacenters/cd-tifc", "/offers?gpu=b200&from=chengdu&max_latency_ms=5", "/signup", "/login"} {
			_, body := a.get(p, "Accept-Language", lang)
			must(t, !strings.Contains(body, "%!"), "%s %s: a formatting error in the page", lang, p)
		}
	}
}
