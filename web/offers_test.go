package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		var o models.Offer
		must(t, db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-tianfu-swpark')", "h100-sxm").First(&o).Error == nil, "find offer")
		res, page := a.get(a.url(routenames.OffersShow, o.ID), "Accept-Language", "en")
		must(t, res.StatusCode == 200, "offer status %d", res.StatusCode)
		contains(t, page, "H100 SXM5 × 8", "NVIDIA H100 datasheet", "¥34.00", "¥27.20", "¥30.60", "¥24.48", "¥20,500", "¥5,535",
			"Chengdu Tianfu Software Park DC", "Tianfu Software Park", "Beijing", "36 ms", "demo data")
		_, zh := a.get(a.url(routenames.OffersShow, o.ID))
		contains(t, zh, "成都天府软件园机房", "天府软件园", "/卡·时", "包月", "标称值来源（原文）")

		_, api := a.get(a.url(routenames.APIOffersShow, o.ID))
		got := decode[handlers.APIOffer](t, api)
		must(t, got.ID == o.ID && got.Datacenter.District == "Tianfu Software Park" && got.LatencyMS["chengdu"] == 3, "api offer %+v", got)

		for _, p := range []string{"/offers/999999", "/offers/abc", "/offers/-1", "/datacenters/nowhere", "/no/such/page"} {
			res, body := a.get(p)
			must(t, res.StatusCode == 404, "%s: status %d", p, res.StatusCode)
			contains(t, body, "页面不存在")
		}
		res, body := a.get("/api/v1/offers/abc")
		must(t, res.StatusCode == 404 && strings.Contains(body, `"code":"not_found"`), "api 404: %d %s", res.StatusCode, body)

		res, page = a.get(a.url(routenames.DatacentersShow, "cd-science-city"), "Accept-Language", "en")
		must(t, res.StatusCode == 200, "dc status %d", res.StatusCode)
		contains(t, page, "Chengdu Science City DC", "Tier IV", "200 Gbps", "Offers in this datacentre (5)", "H200 SXM")
	})
}

// A GET form sends empty fields; the shareable URL drops them.
func TestEmptyParametersLeaveTheURL(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	a := newSQLiteApp(t)
	var o models.Offer
	must(t, a.db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-science-city')", "h100-sxm").First(&o).Error == nil, "find offer")
	// Tuesday 2026-12-01 21:00 Shanghai for 2 h: 1 h peak, 1 h off-peak (10% off), 2 GPUs.
	res, body := a.get(a.url(routenames.APIOffersQuote, o.ID) + query("gpus", "2", "start", "2026-12-01T21:00:00+08:00", "seconds", "7200"))
	must(t, res.StatusCode == 200, "quote %d %s", res.StatusCode, body)
	q := decode[pricing.Breakdown](t, body)
	// GPUs: 2 × (3550 + 3550 × 0.9) = 7100 + 6390 = 13490; the rent's
	// default 50 GB volume at ¥0.30 a GB-month for 2 h: 4.17 → 4.
	must(t, q.GPUFen == 13490 && q.StorageFen == 4 && q.TotalFen == 13494 && q.PeakSeconds == 3600 && q.OffpeakSeconds == 3600 && q.Currency == "cny", "breakdown %+v", q)
	must(t, q.VolumeGB == 50 && q.StoragePricePerGBMonthFen == 30 && q.StoragePerHourFen == 2 && q.StoragePerDayFen == 50, "storage %+v", q)
	must(t, len(q.Discounts) == 1 && q.Discounts[0].Kind == "offpeak" && q.Discounts[0].Pct == 10, "discounts %+v", q.Discounts)
	must(t, q.SLATier == "standard" && q.SLASurchargeFen == 0, "default SLA %+v", q)

	res, body = a.get(a.url(routenames.APIOffersQuote, o.ID) + query("term", "month", "gpus", "8", "sla", "premium"))
	q = decode[pricing.Breakdown](t, body)
	// 8 × ¥21,200 × 1.15 = ¥195,040, and 30 days of 50 GB: ¥15.00.
	must(t, res.StatusCode == 200 && q.GPUFen == 19504000 && q.StorageFen == 1500 && q.TotalFen == 19505500, "month premium %d %+v", res.StatusCode, q)

	for _, bad := range [][2]string{{"gpus", "9"}, {"gpus", "x"}, {"start", "yesterday"}, {"seconds", "-1"}, {"term", "year"}, {"sla", "gold"},
		{"volume_gb", "0"}, {"volume_gb", "x"}, {"volume_gb", "4001"}, {"volume_id", "x"}} {
		res, body := a.get(a.url(routenames.APIOffersQuote, o.ID) + query(bad[0], bad[1]))
		must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"`+bad[0]+`"`), "%s=%s: %d %s", bad[0], bad[1], res.StatusCode, body)
	}
	res, _ = a.get(a.url(routenames.APIOffersQuote, 999999))
	must(t, res.StatusCode == 404, "unknown offer: %d", res.StatusCode)

	// The panel: the same figures on the page, and as a fragment for htmx.
	page := a.url(routenames.OffersShow, o.ID) + query("gpus", "2", "start", "2026-12-01T21:00", "hours", "2")
	res, html := a.get(page, "Accept-Language", "en")
	must(t, res.StatusCode == 200, "page %d", res.StatusCode)
	contains(t, html, `id="quote-total">¥134.94<`, "1 h at the off-peak rate", "1 h at the peak rate", "Off-peak discount −10%",
		"GPUs: ¥134.90", "Storage, 50 GB volume: ¥0.02/h · ¥0.50/day; ¥0.04 for this period")
	res, frag := a.get(page, "HX-Request", "true", "Accept-Language", "en")
	must(t, res.StatusCode == 200 && strings.HasPrefix(strings.TrimSpace(frag), `<div id="quote-result"`), "fragment %q", frag[:min(60, len(frag))])
	res, html = a.get(a.url(routenames.OffersShow, o.ID)+query("gpus", "99"), "Accept-Language", "en")
	must(t, res.StatusCode == 200, "bad gpus: %d", res.StatusCode)
	contains(t, html, "Enter 1 to 8", `id="qerr-gpus"`)
}

// Message formatting never leaks fmt's error markers into a page.
func TestNoFormattingErrorsOnPages(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, p := range []string{"/offers", "/offers/1", "/offers/1?gpus=99", "/datacenters/cd-tifc", "/offers?gpu=b200&from=chengdu&max_latency_ms=5", "/signup", "/login"} {
			_, body := a.get(p, "Accept-Language", lang)
			must(t, !strings.Contains(body, "%!"), "%s %s: a formatting error in the page", lang, p)
		}
	}
}

// benchFixture gives demo H100 SXM offers benchmark reports and uptimes,
// straight in the database, then moves the offers version and refreshes
// the index as the report store and the reliability job do.
type benchFixture struct {
	swpark, science, cq, hitech, bj models.Offer
	realID, simID                   int64
}

func newBenchFixture(t *testing.T, a *app) benchFixture {
	t.Helper()
	db := a.db
	h100 := func(dc string) models.Offer {
		var o models.Offer
		must(t, db.R.Where("gpu_model = 'h100-sxm' AND datacenter_id = (SELECT id FROM datacenters WHERE slug = ?)", dc).First(&o).Error == nil, "find %s", dc)
		return o
	}
	at := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	report := func(nodeID int64, bf16, pct float64, simulated bool) int64 {
		fp16, bw := bf16*1.01, 2680.4
		r := models.BenchmarkReport{NodeID: nodeID, GPUModel: "h100-sxm", GPUs: 8, Trigger: models.BenchVerified, Simulated: simulated,
			Nominal: "{}", Report: "{}", BF16TFLOPS: &bf16, FP16TFLOPS: &fp16, MemBWGBps: &bw, PctOfNominal: &pct, MeasuredAt: at, CreatedAt: at}
		must(t, db.W.Create(&r).Error == nil, "create report")
		must(t, db.W.Exec(`UPDATE nodes SET latest_report_id = ? WHERE id = ?`, r.ID, nodeID).Error == nil, "latest report")
		return r.ID
	}
	uptime := func(nodeID int64, pct float64) {
		must(t, db.W.Exec(`UPDATE nodes SET uptime_30d_pct = ? WHERE id = ?`, pct, nodeID).Error == nil, "uptime")
	}
	f := benchFixture{swpark: h100("cd-tianfu-swpark"), science: h100("cd-science-city"), cq: h100("cq-liangjiang"),
		hitech: h100("cd-hitech"), bj: h100("bj-yizhuang")}
	f.realID = report(f.swpark.NodeID, 791.2, 80, false) // 80% of 989
	f.simID = report(f.science.NodeID, 642.9, 65, true)  // 65%: flagged
	report(f.cq.NodeID, 939.55, 95, false)
	uptime(f.hitech.NodeID, 100)
	uptime(f.swpark.NodeID, 99.97)
	uptime(f.science.NodeID, 99.5)
	must(t, db.W.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'offers'`).Error == nil, "bump")
	reloaded, err := a.index.Refresh(context.Background())
	must(t, reloaded && err == nil, "index reload: %v %v", reloaded, err)
	return f
}

// rawOffers decodes the API's offers keeping each field's JSON as sent.
func rawOffers(t *testing.T, body string) []map[string]json.RawMessage {
	t.Helper()
	var l struct {
		Offers []map[string]json.RawMessage `json:"offers"`
	}
	must(t, json.Unmarshal([]byte(body), &l) == nil, "decode %s", body)
	return l.Offers
}

// Offers carry their node's latest benchmark report and 30-day uptime: in
// the API exactly, in the orders sort=measured and sort=reliability give,
// and on the list and offer pages in both languages.
func TestOffersShowBenchmarksAndUptime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		// Render the list once first: its cached rows must not outlive the snapshot.
		_, before := a.get("/offers?gpu=h100-sxm", "Accept-Language", "en")
		must(t, !strings.Contains(before, "verified 2026"), "a report before any was stored")
		f := newBenchFixture(t, a)

		res, body := a.get("/api/v1/offers" + query("gpu", "h100-sxm", "sort", "measured"))
		must(t, res.StatusCode == 200, "status %d: %s", res.StatusCode, body)
		offers := rawOffers(t, body)
		// Fen per measured TFLOPS: Chongqing 3260/939.55 = 3.47, Tianfu
		// Software Park 3400/791.2 = 4.30, Science City 3550/642.9 = 5.52;
		// then the unmeasured by nominal: Beijing ¥31.80 first.
		var ids []string
		for _, o := range offers[:4] {
			ids = append(ids, string(o["id"]))
		}
		want := []string{i64s(f.cq.ID), i64s(f.swpark.ID), i64s(f.science.ID), i64s(f.bj.ID)}
		must(t, strings.Join(ids, ",") == strings.Join(want, ","), "measured order %v, want %v", ids, want)
		must(t, string(offers[1]["benchmark"]) == `{"id":`+i64s(f.realID)+`,"measured_bf16_tflops":791.2,"pct_of_nominal":80,"simulated":false,"status":"unverified","measured_at":"2026-11-28T14:00:00Z"}`,
			"real benchmark %s", offers[1]["benchmark"])
		must(t, string(offers[2]["benchmark"]) == `{"id":`+i64s(f.simID)+`,"measured_bf16_tflops":642.9,"pct_of_nominal":65,"simulated":true,"status":"simulated","measured_at":"2026-11-28T14:00:00Z"}`,
			"simulated benchmark %s", offers[2]["benchmark"])
		must(t, string(offers[3]["benchmark"]) == "null" && string(offers[3]["uptime_30d_pct"]) == "null", "no report: %s %s", offers[3]["benchmark"], offers[3]["uptime_30d_pct"])
		must(t, string(offers[1]["uptime_30d_pct"]) == "99.97", "uptime %s", offers[1]["uptime_30d_pct"])

		_, body = a.get(a.url(routenames.APIOffersShow, f.science.ID))
		var one map[string]json.RawMessage
		must(t, json.Unmarshal([]byte(body), &one) == nil, "decode %s", body)
		must(t, string(one["benchmark"]) == string(offers[2]["benchmark"]) && string(one["uptime_30d_pct"]) == "99.5", "show: %s", body)

		_, body = a.get("/api/v1/offers" + query("gpu", "h100-sxm", "sort", "reliability"))
		offers = rawOffers(t, body)
		ids = ids[:0]
		for _, o := range offers[:4] {
			ids = append(ids, string(o["uptime_30d_pct"]))
		}
		must(t, strings.Join(ids, ",") == "100,99.97,99.5,null", "reliability order %v", ids)
		res, body = a.get("/api/v1/offers?sort=uptime")
		must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"sort"`), "bad sort: %d %s", res.StatusCode, body)

		_, en := a.get("/offers"+query("gpu", "h100-sxm", "sort", "measured"), "Accept-Language", "en")
		// The agent's word alone is not "verified" (issue 17): no independent
		// witness measured these nodes. The flag is relative to the 80% an
		// H100 really reaches (85% of it: 68% of nominal), not a flat 70%.
		contains(t, en, `data-status="unverified"`, ">agent-reported<", ">simulated<", "below 68% of nominal", "measured 791.2", "80% of nominal",
			"measured 642.9", "65% of nominal", `title="Uptime, last 30 days">99.97%<`, `title="Uptime, last 30 days">—<`, "offers with simulated figures follow",
			`href="/benchmarks/`+i64s(f.realID)+`"`, `<option value="reliability">Uptime (30 days)</option>`)
		must(t, strings.Count(en, "below 68% of nominal") == 1, "only the simulated 65%% report is flagged")
		must(t, !strings.Contains(en, "badge verified"), "a report without an independent witness is shown verified")
		_, zh := a.get("/offers"+query("gpu", "h100-sxm", "sort", "reliability"), "Accept-Language", "zh-CN")
		contains(t, zh, ">代理自报<", ">模拟<", "低于标称 68%", "实测 791.2", "标称的 80%", `title="近 30 天可用性">99.97%<`, `title="近 30 天可用性">—<`, "尚无数据的节点排在最后")
		_, page := a.get("/offers?sort=nope", "Accept-Language", "en")
		contains(t, page, `id="err-sort" role="alert">Unknown sort`)

		_, en = a.get(a.url(routenames.OffersShow, f.swpark.ID), "Accept-Language", "en")
		contains(t, en, "Latest benchmark", "791.2 TFLOPS", "989 TFLOPS", "799.1 TFLOPS", "2,680 GB/s", "3,350 GB/s",
			"<strong>80%</strong>", ">agent-reported<", "measured 2026-11-28 22:00 (UTC+8)",
			`href="/benchmarks/`+i64s(f.realID)+`"`, `href="/nodes/`+i64s(f.swpark.NodeID)+`/benchmarks"`,
			"Uptime, last 30 days", "<strong>99.97%</strong>", `href="/sla"`)
		must(t, !strings.Contains(en, "below 68%") && !strings.Contains(en, "badge verified"), "an 80%% report is flagged, or shown verified")
		_, zh = a.get(a.url(routenames.OffersShow, f.science.ID), "Accept-Language", "zh-CN")
		contains(t, zh, "最新基准测试", "模拟节点代理", "低于标称 68%", "<strong>65%</strong>", "近 30 天可用性", "99.50%")
		_, en = a.get(a.url(routenames.OffersShow, f.bj.ID), "Accept-Language", "en")
		contains(t, en, "No benchmark report for this node yet.", "not computed yet")
	})
}

func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// An offer the list does not show (paused here; also one waiting for its
// node or of an unverified provider) is not reachable by id either: its
// page, JSON, quote and rent form are 404, and come back once it is listed.
func TestHiddenOfferIsNotReachableByID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		var o models.Offer
		if err := db.R.Where("status = ?", models.OfferListed).Order("id").First(&o).Error; err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(o.ID, 10)
		paths := []string{"/offers/" + id, "/api/v1/offers/" + id, "/api/v1/offers/" + id + "/quote?gpus=1&seconds=3600"}
		for _, p := range paths {
			res, body := a.get(p)
			must(t, res.StatusCode == 200, "listed offer %s: %d %s", p, res.StatusCode, body)
		}
		if err := db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("status", models.OfferPaused).Error; err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			res, body := a.get(p)
			must(t, res.StatusCode == 404, "paused offer %s: %d %s, want 404", p, res.StatusCode, body)
		}
		if err := db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("status", models.OfferListed).Error; err != nil {
			t.Fatal(err)
		}
		res, body := a.get(paths[0])
		must(t, res.StatusCode == 200, "listed again: %d %s", res.StatusCode, body)
	})
}
