package offers

import (
	"net/url"
	"reflect"
	"suanli/pricing"
	"testing"
)

func TestParseYuan(t *testing.T) {
	good := map[string]int64{"0": 0, "35": 3500, "35.5": 3550, "35.05": 3505, "0.01": 1, "9999999.99": 999999999}
	for s, want := range good {
		if got, ok := pricing.ParseYuan(s); !ok || got != want {
			t.Errorf("pricing.ParseYuan(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-1", "1.234", "1e3", "abc", " 5", "NaN", "10000000", "1,000"} {
		if _, ok := pricing.ParseYuan(s); ok {
			t.Errorf("pricing.ParseYuan(%q) accepted", s)
		}
	}
	for _, fen := range []int64{1, 10, 100, 3550, 3505, 999999999} {
		back, ok := pricing.ParseYuan(pricing.FenToYuanString(fen))
		if !ok || back != fen {
			t.Errorf("round trip %d → %q → %d", fen, pricing.FenToYuanString(fen), back)
		}
	}
}

func TestParseOfferQueryKeepsValidDropsInvalid(t *testing.T) {
	v, _ := url.ParseQuery("gpu=h100-sxm&gpu=nope&gpu=h100-sxm&city=chengdu&min_gpus=x&max_price=40.5&from=chengdu&max_latency_ms=10&sort=latency&available=1&student=on&page=2")
	q, errs := ParseQuery(v, false)
	if len(errs) != 2 || errs[0].Field != "gpu" || errs[1].Field != "min_gpus" {
		t.Fatalf("errs %v", errs)
	}
	want := Query{GPUs: []string{"h100-sxm"}, City: "chengdu", MaxPriceFen: 4050, From: "chengdu", MaxLatencyMS: 10,
		Sort: SortLatency, Available: true, Student: true, Page: 2, PerPage: DefaultPerPage}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("query\n got %+v\nwant %+v", q, want)
	}
	// Values encodes the same query back (the links on the page rely on it).
	again, errs := ParseQuery(q.Values(), false)
	if len(errs) != 0 || !reflect.DeepEqual(again, q) {
		t.Errorf("round trip: %+v %v", again, errs)
	}
}

func TestParseOfferQueryRules(t *testing.T) {
	cases := []struct {
		raw, field string
	}{
		{"max_latency_ms=10", "max_latency_ms"}, // no city to measure from
		{"sort=latency", "sort"},                // likewise
		{"per_page=5", ""},                      // pages ignore per_page
		{"interconnect=token-ring", "interconnect"},
		{"region=mars", "region"},
		{"min_gpus=0", "min_gpus"},
		{"min_gpus=65", "min_gpus"},
		{"max_price=0", "max_price"},
		{"max_latency_ms=-3", "max_latency_ms"},
		{"max_latency_ms=Inf", "max_latency_ms"},
		{"student=2", "student"},
		{"city=chengdu&max_latency_ms=10", ""}, // the city is the origin
	}
	for _, c := range cases {
		v, _ := url.ParseQuery(c.raw)
		q, errs := ParseQuery(v, false)
		switch {
		case c.field == "" && len(errs) > 0:
			t.Errorf("%s: unexpected %v", c.raw, errs)
		case c.field != "" && (len(errs) != 1 || errs[0].Field != c.field || errs[0].Key == ""):
			t.Errorf("%s: errs %v, want one on %s", c.raw, errs, c.field)
		}
		if q.PerPage != DefaultPerPage {
			t.Errorf("%s: per_page %d", c.raw, q.PerPage)
		}
	}
	v, _ := url.ParseQuery("per_page=500")
	if _, errs := ParseQuery(v, true); len(errs) != 1 || errs[0].Field != "per_page" {
		t.Errorf("API per_page 500: %v", errs)
	}
}
