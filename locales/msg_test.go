package locales_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"suanli/locales"
)

// A stored message reads the same after its trip through the database (its
// JSON): numbers for their verbs whatever JSON made of them, nested
// messages and lists in the reader's language.
func TestStoredMessagesReadTheSameInEachLanguage(t *testing.T) {
	cases := []locales.Msg{
		locales.M("memo.rental", int64(12)),
		// A whole uptime is stored as 99, and still prints as %.4f.
		locales.M("memo.sla_credit", int64(3), "2026-11", locales.M("sla.tier.standard"), 99.0, 10),
		locales.M("memo.sla_credit", 3, "2026-11", locales.M("sla.tier.premium"), 93.79841, 25),
		locales.M("check.xid.with_ignored", locales.M("check.xid.critical", []locales.Msg{locales.M("xid.79"), locales.M("xid.other", 7)}),
			[]locales.Msg{locales.M("xid.13")}),
		locales.M("memo.receivable_offset", "12.50", "2026-11"),
		locales.M("check.temperature.ok", uint32(40), uint32(90)),
		locales.Lines(locales.M("check.ecc.errors", uint64(2)), locales.M("msg.verbatim", "an agent's own words")),
	}
	for _, m := range cases {
		stored := m.JSON()
		back := locales.ParseMsg(stored)
		for _, lang := range locales.Supported {
			want, got := m.Text(lang), back.Text(lang)
			if got != want {
				t.Errorf("%s in %s: %q after storing (%s), want %q", m.Key, lang, got, stored, want)
			}
			if strings.Contains(got, "%!") || strings.Contains(got, "MISSING") {
				t.Errorf("%s in %s: %q", m.Key, lang, got)
			}
		}
	}
	if got := locales.M("memo.sla_credit", 3, "2026-11", locales.M("sla.tier.standard"), 99.0, 10).Text(locales.ZH); !strings.Contains(got, "99.0000%") || !strings.Contains(got, "标准") {
		t.Errorf("zh SLA memo %q", got)
	}
	if got := locales.Lines(locales.M("check.xid.ok"), locales.M("check.ecc.ok")).LinesOf(locales.ZH); len(got) != 2 || got[0] != "无严重 XID" {
		t.Errorf("lines %q", got)
	}
	var zero locales.Msg
	if zero.JSON() != "" || !locales.ParseMsg("").IsZero() || !locales.ParseMsg("not json").IsZero() || zero.Or(locales.ZH, "stored") != "stored" {
		t.Error("the zero message is not stored as nothing, or not shown as the stored text")
	}
	var s struct {
		M locales.Msg `json:"m,omitzero"`
	}
	if b, _ := json.Marshal(s); string(b) != "{}" {
		t.Errorf("a zero message in JSON: %s", b)
	}
}

// What someone else sent (an agent's check) is rendered only when it is a
// message of the area, with as many arguments as it takes.
func TestMessagesFromOutsideAreChecked(t *testing.T) {
	for _, c := range []struct {
		m  string
		ok bool
	}{
		{`{"key":"check.ecc.errors","args":[3]}`, true},
		{`{"key":"check.xid.critical","args":[[{"key":"xid.79"},{"key":"xid.other","args":[999]}]]}`, true},
		{`{"key":"check.ecc.errors"}`, false},                                               // too few arguments
		{`{"key":"check.ecc.errors","args":[1,2]}`, false},                                  // too many
		{`{"key":"check.no_such_message"}`, false},                                          // unknown
		{`{"key":"err.insufficient"}`, false},                                               // another area's
		{`{"key":"check.xid.critical","args":[[{"key":"memo.rental","args":[1]}]]}`, false}, // nested, another area's
		{`{"key":"check.present.at","args":[{"deep":true}]}`, false},                        // an object that is no message
		{`{"key":"check.present.at","args":["` + strings.Repeat("x", 201) + `"]}`, false},
	} {
		if got := locales.ParseMsg(c.m).Valid("check.", "xid."); got != c.ok {
			t.Errorf("%s: valid %v, want %v", c.m, got, c.ok)
		}
	}
}

// Every message the code stores exists in both catalogues and takes the
// same arguments in both, including the keys built from a list of values.
func TestEveryStoredMessageExists(t *testing.T) {
	lit := regexp.MustCompile(`locales\.M\("([a-z0-9_.]+)"`)
	dyn := regexp.MustCompile(`locales\.M\("([a-z0-9_.]+\.)" ?\+`)
	values := map[string][]string{
		"role.":                {"owner", "admin", "member"},
		"org.kind.":            {"team", "lab", "provider"},
		"sla.tier.":            {"standard", "premium"},
		"admin.payout.method.": {"stripe", "bank_transfer"},
		"audit.method.":        {"stripe", "bank_transfer"},
		"msg.term.":            {"on_demand", "week", "month"},
		"incident.reason.":     {"node_silent", "gpu_failing"},
		"event.incident.":      {"node_silent", "gpu_failing"},
		"check.clock.":         {"hw_slowdown", "hw_thermal", "hw_power_brake", "idle", "app_clocks", "sw_power_cap", "sync_boost", "sw_thermal", "display_clock"},
		"xid.":                 {"13", "31", "43", "45", "48", "61", "62", "63", "64", "68", "74", "79", "92", "94", "95", "109", "119", "120"},
		"bench.load.what.":     {"bf16", "fp16", "mem_bw"},
	}
	used := map[string]bool{"msg.lines": true, "msg.lines_sep": true, "msg.list_sep": true}
	for _, dir := range []string{"..", "../offers", "../tco", "../fleet", "../benchmarks", "../rentals", "../billing", "../sla", "../providers", "../metrics", "../audit", "../accounts", "../gpu", "../agent", "../views", "../demo"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != dir {
				return filepath.SkipDir
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				if !strings.HasSuffix(m[1], ".") { // a prefix: see dyn
					used[m[1]] = true
				}
			}
			for _, m := range dyn.FindAllStringSubmatch(string(b), -1) {
				vs, ok := values[m[1]]
				if !ok {
					t.Errorf("%s builds message keys from %q: list its values in this test", p, m[1])
				}
				for _, v := range vs {
					used[m[1]+v] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(used) < 100 {
		t.Fatalf("found only %d stored messages: the scan is broken", len(used))
	}
	var bad []string
	for k := range used {
		for _, lang := range locales.Supported {
			if !locales.Has(lang, k) {
				bad = append(bad, lang+": "+k+" missing")
			}
		}
		if n, ok := locales.ArgCountOf(locales.EN, k), locales.ArgCountOf(locales.ZH, k); n != ok {
			bad = append(bad, k+": takes different arguments in English and Chinese")
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
