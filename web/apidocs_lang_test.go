package web_test

import (
	"regexp"
	"strings"
	"suanli/routenames"
	"testing"

	"golang.org/x/net/html"
)

// englishProse is text of two or more Latin words and no Chinese: a
// sentence or a phrase, not a code, a unit or a name alone.
var (
	englishProse = regexp.MustCompile(`[A-Za-z]{2,}[,.:;()]?\s+[A-Za-z]{2,}`)
	hanText      = regexp.MustCompile(`\p{Han}`)
)

// wrongLang returns the English prose of a page that its markup says is in
// another language: text whose nearest lang attribute is not "en". Code
// (<code>, <pre>) is in no language and is skipped.
func wrongLang(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	var out []string
	var walk func(n *html.Node, lang string)
	walk = func(n *html.Node, lang string) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "code", "pre", "script", "style", "head":
				return
			}
			if l := htmlAttr(n, "lang"); l != "" {
				lang = l
			}
		}
		if n.Type == html.TextNode {
			s := strings.TrimSpace(n.Data)
			if lang != "en" && englishProse.MatchString(s) && !hanText.MatchString(s) {
				out = append(out, s)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, lang)
		}
	}
	walk(doc, "")
	return out
}

// The API reference's descriptions come from the OpenAPI document, in
// English: on the Chinese page they are marked lang="en", so that a
// screen reader (and a translator) reads them as English.
func TestAPIDocsMarksEnglishAsEnglish(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ac := newActor(a, "reader")
	body := ac.page(t, a.url(routenames.APIDocs), "zh-CN", 200)
	contains(t, body, `<html lang="zh-CN"`)
	got := wrongLang(body)
	for i, s := range got {
		if i == 10 {
			t.Errorf("… and %d more", len(got)-10)
			break
		}
		t.Errorf("English marked as zh-CN: %q", s)
	}
	// The English page needs nothing extra; the check itself sees English.
	must(t, len(wrongLang(`<html lang="zh-CN"><p>Returns the offers</p></html>`)) == 1, "the check misses English prose in a zh-CN page")
}
