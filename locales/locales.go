// Package locales holds the zh-CN and English message catalogs and picks
// the reader's language. Every user-facing string goes through T.
package locales

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
)

// The supported languages; ZH is the default.
const (
	ZH = "zh-CN"
	EN = "en"
)

// Supported lists the languages in switcher order.
var Supported = []string{ZH, EN}

//go:embed *.json
var files embed.FS

var catalogs = map[string]map[string]string{
	ZH: mustLoad("zh-CN"),
	EN: mustLoad("en"),
}

// mustLoad merges the language's catalog files: LANG.json and any
// LANG.AREA.json (one per area of the product, so that work on separate
// pages does not edit one file). A key defined twice is a mistake.
func mustLoad(lang string) map[string]string {
	m := map[string]string{}
	names, _ := fs.Glob(files, lang+".*json")
	for _, name := range names {
		if name != lang+".json" && strings.Count(strings.TrimSuffix(strings.TrimPrefix(name, lang+"."), ".json"), ".") != 0 {
			continue
		}
		b, err := files.ReadFile(name)
		if err != nil {
			panic(err)
		}
		part := map[string]string{}
		if err := json.Unmarshal(b, &part); err != nil {
			panic("locales: " + name + ": " + err.Error())
		}
		for k, v := range part {
			if _, dup := m[k]; dup {
				panic("locales: " + name + ": key " + k + " is defined twice")
			}
			m[k] = v
		}
	}
	return m
}

// Keys returns every key of the language's catalog (for tests).
func Keys(lang string) []string {
	var out []string
	for k := range catalogs[lang] {
		out = append(out, k)
	}
	return out
}

// T returns the message for key in lang, formatted with args (fmt verbs;
// use explicit argument indexes where word order differs). A missing key
// falls back to English and then to the key itself, and is logged.
func T(lang, key string, args ...any) string {
	s, ok := catalogs[lang][key]
	if !ok {
		s, ok = catalogs[EN][key]
		if !ok {
			slog.Warn("missing message", "key", key, "lang", lang)
			s = key
		}
	}
	if len(args) == 0 {
		return s
	}
	return fmt.Sprintf(s, args...)
}

// Has reports whether lang's catalog has key.
func Has(lang, key string) bool {
	_, ok := catalogs[lang][key]
	return ok
}

// Normalize returns the supported language code for tag, or "".
func Normalize(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	switch {
	case tag == "zh" || strings.HasPrefix(tag, "zh-") || strings.HasPrefix(tag, "zh_"):
		return ZH
	case tag == "en" || strings.HasPrefix(tag, "en-") || strings.HasPrefix(tag, "en_"):
		return EN
	}
	return ""
}

// FromAcceptLanguage picks the supported language the client prefers most,
// or ZH when it names none we have.
func FromAcceptLanguage(header string) string {
	best, bestQ := "", -1.0
	for _, part := range strings.Split(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if lang := Normalize(tag); lang != "" && q > bestQ && q > 0 {
			best, bestQ = lang, q
		}
	}
	if best == "" {
		return ZH
	}
	return best
}
