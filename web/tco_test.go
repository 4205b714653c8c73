package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/catalog"
	"suanli/routenames"
	"suanli/tco"
)

// The TCO calculator through the real router over the seeded demo rentals.
func TestTCOPage(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	en := []string{"Accept-Language", "en"}

	t.Run("defaults: chart, formula and the public figures", func(t *testing.T) {
		res, page := a.get(a.url(routenames.TCO), en...)
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		contains(t, page, `lang="en"`, `<svg class="tco-svg"`, `<polyline class="series buy"`, `<polyline class="series od"`,
			`<polyline class="series monthly"`, "The formula, with these figures",
			// 8 × A100 80GB: ¥600,000 to buy, ¥210,574.08 a year to run (over ¥200,000).
			"8 × (¥65,000.00 + ¥10,000.00)", "¥600,000.00", "¥210,574.08 a year",
			"8 × (400 W × 100% + 400 W) × 1.3 × 730 h × ¥0.65/kWh = 6,073.6 kWh × ¥0.65/kWh",
			`hx-get="/tco"`, `hx-trigger="change, keyup changed delay:400ms, submit"`, `hx-target="#tco-results"`, `method="get"`)
		// The cheapest live on-demand A100 80GB at 30% off-peak use is
		// Chongqing's ¥28.00 with 20% off (¥26.32 expected), not Beijing's
		// ¥27.80 with 15% off (¥26.549); the cheapest monthly is ¥17,200.
		//   on demand: 8 × 730 h × 60% = 3,504 GPU·h × ¥26.32 = ¥92,225.28 a month; × 36 = ¥3,320,110.08
		//   monthly:   8 × ¥17,200 = ¥137,600 a month; × 36 = ¥4,953,600.00
		//   buy:       ¥600,000 + 36 × ¥17,547.84 = ¥1,231,722.24 (fully depreciated after 36 months)
		//   break-even on demand: ⌈600,000 ÷ (92,225.28 − 17,547.84)⌉ = ⌈8.03⌉ = 9
		contains(t, page, "Chongqing Liangjiang DC", "¥28.00/GPU·h", "off-peak −20%", "¥17,200.00/GPU·month",
			"3,504 GPU·h × ¥26.32", "¥3,320,110.08", "¥4,953,600.00", "¥1,231,722.24", "from month 9")
		capex, running := tco.Reference()
		must(t, capex == tco.PublicServerFen && running > tco.PublicRunningFen,
			"the defaults give ¥%d to buy and ¥%d a year to run an 8×A100 server; public figures: about ¥600,000 and over ¥200,000", capex/100, running/100)
		if strings.Contains(page, ` style="`) || strings.Contains(page, "<script>") {
			t.Error("inline style or script: the CSP forbids them")
		}
	})

	t.Run("fixed inputs give the hand-computed totals", func(t *testing.T) {
		// The case computed by hand in pricing/tco_test.go: 8 × A100 80GB
		// over 24 months, on demand ¥27.80 with 15% off-peak, monthly ¥17,200.
		q := query("months", "24", "monthly_price", "17200", "od_offpeak", "15", "od_price", "27.8")
		res, page := a.get(a.url(routenames.TCO)+q, en...)
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		contains(t, page,
			"¥1,021,148.16", // buy, cash: 600,000 + 24 × 17,547.84
			"¥821,148.16",   // buy, owning: 600,000 × 24/36 + 24 × 17,547.84
			"¥200,000.00",   // book value left
			"¥2,232,664.70", // on demand: 24 × 3,504 GPU·h × ¥26.549 = 2,232,664.704
			"¥93,027.70",    // a month: 3,504 × ¥26.549 = 93,027.696
			"¥3,302,400.00", // monthly: 24 × 8 × 17,200
			"3,504 GPU·h × ¥26.549", "(entered)", "from month 8", "from month 5")
	})

	t.Run("htmx gets the fragment", func(t *testing.T) {
		res, frag := a.get(a.url(routenames.TCO)+query("gpus", "4"), "HX-Request", "true", "Accept-Language", "en")
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		must(t, !strings.Contains(frag, "<html") && !strings.Contains(frag, `id="tco-form"`), "fragment has the page: %.200s", frag)
		contains(t, frag, `id="tco-results"`, `<svg class="tco-svg"`, "4 × (¥65,000.00 + ¥10,000.00)", "¥300,000.00",
			`id="err-gpus" role="alert" hx-swap-oob="true"`, `id="lang-switch"`)
		must(t, res.Header.Get("HX-Push-Url") == "/tco?gpus=4", "HX-Push-Url %q", res.Header.Get("HX-Push-Url"))
		vary := strings.Join(res.Header.Values("Vary"), ",")
		must(t, strings.Contains(vary, "HX-Request"), "Vary %q", vary)
	})

	t.Run("a change of model replaces the old model's defaults", func(t *testing.T) {
		// The form was drawn for the A100 and sends its defaults back.
		q := query("gpu", "h100-sxm", "gpu_price", "65000", "server_share", "10000", "host_w", "400", "shown_gpu", "a100-80g-sxm")
		res, frag := a.get(a.url(routenames.TCO)+q, "HX-Request", "true", "Accept-Language", "en")
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		// H100 SXM defaults: 8 × (¥230,000 + ¥15,000) = ¥1,960,000.
		contains(t, frag, "8 × (¥230,000.00 + ¥15,000.00)", "¥1,960,000.00", "(700 W × 100% + 500 W)",
			`id="fld-gpu_price" hx-swap-oob="true"`, `value="230000"`, `id="tco-shown-gpu" name="shown_gpu" value="h100-sxm" hx-swap-oob="true"`)
		must(t, res.Header.Get("HX-Push-Url") == "/tco?gpu=h100-sxm", "HX-Push-Url %q", res.Header.Get("HX-Push-Url"))
		// A figure of the reader's own survives the change.
		_, frag = a.get(a.url(routenames.TCO)+query("gpu", "h100-sxm", "gpu_price", "200000", "shown_gpu", "a100-80g-sxm"), "HX-Request", "true")
		contains(t, frag, "8 × (¥200,000.00 + ¥15,000.00)")
	})

	t.Run("the address is made shareable", func(t *testing.T) {
		// A plain form submission sends every field; defaults are left out.
		res, _ := a.get(a.url(routenames.TCO)+query("gpu", "a100-80g-sxm", "gpus", "8", "months", "24", "pue", "1.30", "od_price", "", "shown_gpu", "a100-80g-sxm"), en...)
		must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == "/tco?months=24", "%d → %q", res.StatusCode, res.Header.Get("Location"))
	})

	t.Run("a model nobody lists leaves the rent side out", func(t *testing.T) {
		res, page := a.get(a.url(routenames.TCO)+query("gpu", "rtx-3090"), en...)
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		contains(t, page, "No live offer lists GeForce RTX 3090", `<polyline class="series buy"`, "8 × (¥6,000.00 + ¥3,000.00)")
		for _, absent := range []string{`<polyline class="series od"`, `id="tco-on_demand"`, `id="tco-monthly"`, `id="tco-be-od"`} {
			must(t, !strings.Contains(page, absent), "%s on a page without offers", absent)
		}
		// A price entered brings it back.
		_, page = a.get(a.url(routenames.TCO)+query("gpu", "rtx-3090", "od_price", "2.5"), en...)
		contains(t, page, `<polyline class="series od"`, `id="tco-on_demand"`, "¥2.50/GPU·h")
	})

	t.Run("bad values are explained, never a 500", func(t *testing.T) {
		cases := []struct{ param, value, msg string }{
			{"gpus", "-3", "Enter a whole number from 1 to 10000; the default is used."},
			{"gpus", "99999999999999999999999", "Enter a whole number from 1 to 10000"},
			{"months", "abc", "Enter a whole number from 1 to 120"},
			{"months", "0", "Enter a whole number from 1 to 120"},
			{"gpu_price", "-100", "Enter an amount in yuan"},
			{"gpu_price", "1e99", "Enter an amount in yuan"},
			{"gpu_price", "99999999999", "Enter an amount in yuan"},
			{"kwh_price", "11", "up to ¥10;"},
			{"pue", "9", "Enter a PUE from 1.00 to 3.00"},
			{"pue", "one", "Enter a PUE from 1.00 to 3.00"},
			{"util_pct", "101", "Enter a whole number from 0 to 100"},
			{"draw_pct", "50.5", "Enter a whole number from 0 to 100"},
			{"od_price", "0", "Enter a price in yuan above 0"},
			{"od_offpeak", "-1", "the offer&#39;s discount is used"},
			{"gpu", "gtx-1080", `Unknown GPU model &#34;gtx-1080&#34;; showing the A100 80GB SXM4.`},
			{"space", "<script>", "Enter an amount in yuan"},
		}
		for _, c := range cases {
			for _, htmx := range []bool{false, true} {
				h := en
				if htmx {
					h = append([]string{"HX-Request", "true"}, en...)
				}
				res, page := a.get(a.url(routenames.TCO)+query(c.param, c.value), h...)
				if res.StatusCode != 200 {
					t.Errorf("%s=%s (htmx %v): status %d", c.param, c.value, htmx, res.StatusCode)
					continue
				}
				contains(t, page, c.msg, `id="err-`+c.param+`"`, "¥") // the message, and results from the defaults
				if strings.Contains(page, "<script>") {
					t.Errorf("%s=%s: unescaped", c.param, c.value)
				}
			}
		}
		// The rejected value stays in its field.
		_, page := a.get(a.url(routenames.TCO)+query("months", "abc"), en...)
		contains(t, page, `value="abc"`, `aria-invalid="true"`, "8 × (¥65,000.00 + ¥10,000.00)")
	})

	t.Run("Chinese", func(t *testing.T) {
		res, page := a.get(a.url(routenames.TCO), "Accept-Language", "zh-CN")
		must(t, res.StatusCode == 200, "status %d", res.StatusCode)
		contains(t, page, `lang="zh-CN"`, "买还是租", "计算公式（代入当前数值）", "¥600,000.00", "每年 ¥210,574.08", "按量租用", "包月租用",
			"第 9 个月起", "¥/卡·月", "¥100万")
		_, page = a.get(a.url(routenames.TCO)+query("months", "abc"), "Accept-Language", "zh-CN")
		contains(t, page, "请输入 1 到 120 之间的整数；已使用默认值。")
		_, page = a.get(a.url(routenames.TCO)+query("gpu", "rtx-3090"), "Accept-Language", "zh-CN")
		contains(t, page, "目前没有 GeForce RTX 3090 的在售报价")
	})

	t.Run("every catalogue model has defaults and a page", func(t *testing.T) {
		for _, m := range catalog.GPUModels() {
			path := a.url(routenames.TCO) + query("gpu", m.Slug)
			if m.Slug == tco.DefaultModel {
				path = a.url(routenames.TCO) // the default model is left out of the address
			}
			res, page := a.get(path, en...)
			if res.StatusCode != 200 || strings.Contains(page, "8 × (¥0.00 + ¥0.00)") {
				t.Errorf("%s: status %d or no default price", m.Slug, res.StatusCode)
			}
		}
	})
}

// In real Chromium: typing recomputes the results in place (htmx), and a
// change of model brings that model's defaults into the form.
func TestTCOBrowserRecomputes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	a := newSQLiteApp(t)
	ctx := newBrowser(t, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(a.srv.URL+"/tco"), chromedp.WaitVisible(chromedp.ID("tco-results"))); err != nil {
		t.Fatalf("open /tco: %v", err)
	}
	eval[int](t, ctx, `window.__noReload = 1`)
	waitFor := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(0))); err != nil {
			t.Fatalf("waiting for %s: %v (results: %.300s)", what, err, eval[string](t, ctx, `document.getElementById("tco-results").textContent`))
		}
	}
	eval[string](t, ctx, `document.getElementById("t-gpus").value = ""`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("t-gpus"), "16")); err != nil {
		t.Fatal(err)
	}
	waitFor("16 GPUs", `document.getElementById("tco-results").textContent.includes("16 × (¥65,000.00 + ¥10,000.00)")`)
	waitFor("the settle", `!document.querySelector(".htmx-request, .htmx-settling, .htmx-swapping")`)
	eval[bool](t, ctx, `(() => { const s = document.getElementById("t-gpu"); s.value = "h100-sxm"; s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`)
	waitFor("the H100's defaults", `document.getElementById("t-gpu_price").value === "230000" && document.getElementById("tco-results").textContent.includes("16 × (¥230,000.00 + ¥15,000.00)")`)
	must(t, eval[string](t, ctx, `document.getElementById("tco-shown-gpu").value`) == "h100-sxm", "shown_gpu not updated")
	must(t, eval[bool](t, ctx, `window.__noReload === 1`), "the page reloaded; htmx should swap #tco-results in place")
	waitFor("the pushed address", `location.search === "?gpu=h100-sxm&gpus=16"`)
}
