package locales_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"suanli/catalog"
	"suanli/locales"
	"suanli/models/ledger"
	"suanli/offers"
)

func TestCatalogsHaveTheSameKeys(t *testing.T) {
	zh, en := locales.Keys(locales.ZH), locales.Keys(locales.EN)
	for _, k := range zh {
		if !locales.Has(locales.EN, k) {
			t.Errorf("%s: in zh-CN, missing in en", k)
		}
	}
	for _, k := range en {
		// English plural forms (".one") have no Chinese counterpart.
		if !locales.Has(locales.ZH, k) && !strings.HasSuffix(k, ".one") {
			t.Errorf("%s: in en, missing in zh-CN", k)
		}
	}
}

// Every message key the code names literally exists, and so does every key
// built from a list of values.
func TestEveryKeyUsedExists(t *testing.T) {
	re := regexp.MustCompile(`\b(?:T|N|flash\(c,) ?\(?"([a-z0-9_.-]+)"|\bField\("[a-z0-9_]*", "([a-z0-9_.-]+)"|"((?:err|error|form|lab|org|tokens|mail|role)\.[a-z0-9_.]+)"`)
	used := map[string]bool{}
	for _, dir := range []string{"../views", "../handlers", "../offers", "../tco", "../fleet", "../benchmarks", "../rentals", "../billing", "../sla", "../providers", "../metrics", "../audit", "../web", "../accounts", "../models", "../images", "../volumes", "../idlestop", "../spendalerts"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, "_templ.go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".templ") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				used[m[1]+m[2]+m[3]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(used) < 50 {
		t.Fatalf("found only %d keys: the scan is broken", len(used))
	}
	for _, k := range offers.SortKeys {
		used["sort."+k], used["sort.option."+k] = true, true
	}
	for _, ic := range catalog.Interconnects {
		used["filter.ic."+ic] = true
	}
	for _, ic := range []string{catalog.InterconnectPCIe, catalog.InterconnectNVLink, catalog.InterconnectNVLinkIB} {
		used["ic."+ic] = true
	}
	for _, c := range []string{"yes", "partly", "no"} {
		used["spec.confirmed."+c] = true
	}
	for _, f := range []string{"gpu", "city", "region", "interconnect", "available", "student"} {
		used["filter."+f] = true
	}
	for _, m := range []string{"verify", "reset", "lab_confirm", "invite"} {
		used["mail."+m+".subject"], used["mail."+m+".body"] = true, true
	}
	for _, k := range []string{"team", "lab", "provider"} {
		used["org.kind."+k] = true
	}
	used["org.pending_lab"], used["org.pending_provider"] = true, true
	for _, k := range ledger.LedgerKinds {
		used["ledger.kind."+k] = true
	}
	for _, k := range []string{"pending", "paid", "failed", "flagged"} {
		used["topup.status."+k] = true
	}
	used["refund.status.pending"], used["refund.status.done"] = true, true
	used["wallet.method.stripe"], used["wallet.method.bank"] = true, true
	for _, r := range []string{"owner", "admin", "member"} {
		used["role."+r] = true
	}
	var missing []string
	for k := range used {
		if !strings.Contains(k, ".") || strings.HasSuffix(k, ".") || strings.HasSuffix(k, "_") {
			continue // a field name passed to invalid(), or a prefix
		}
		for _, lang := range locales.Supported {
			if !locales.Has(lang, k) {
				missing = append(missing, lang+":"+k)
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("missing messages: %v", missing)
	}
}

func TestLanguageChoice(t *testing.T) {
	cases := map[string]string{
		"":                        locales.ZH,
		"en-US,en;q=0.9":          locales.EN,
		"zh-CN,zh;q=0.9,en;q=0.8": locales.ZH,
		"fr-FR, en;q=0.5":         locales.EN,
		"de":                      locales.ZH,
		"en;q=0.2, zh-TW;q=0.8":   locales.ZH,
		"en;q=0, zh;q=0.1":        locales.ZH,
		";;;,,q=abc":              locales.ZH,
	}
	for h, want := range cases {
		if got := locales.FromAcceptLanguage(h); got != want {
			t.Errorf("FromAcceptLanguage(%q) = %s, want %s", h, got, want)
		}
	}
}
