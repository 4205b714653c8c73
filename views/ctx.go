// Package views holds the templ components and what they share: the
// request-scoped view context and number and money formatting. Views
// receive data; they never query.
package views

import (
	"net/url"

	"suanli/catalog"
	"suanli/locales"
	"suanli/routenames"
	"suanli/static"
)

// Ctx is the request-scoped view context every page receives.
type Ctx struct {
	Lang      string
	RequestID string
	// Path is the current path with its query, for the language switch.
	Path string
	// URL builds a URL from a route name (echo's Reverse).
	URL func(name string, params ...any) string
	// CSRF returns the token forms send as _csrf and htmx as
	// X-CSRF-Token; it is made (and its cookie set) on first use, so pages
	// without forms cost no token.
	CSRF func() string
	// User is the logged-in user, or nil.
	User *Viewer
	// Student is true when the user sees student prices.
	Student bool
	// Flash is a one-time message from the previous request.
	Flash string
}

// Viewer is what pages show of the logged-in user.
type Viewer struct {
	ID       int64
	Name     string
	Email    string
	Verified bool
	Admin    bool
}

// HXHeaders is the body's hx-headers value: every htmx request sends the
// CSRF token.
func (c Ctx) HXHeaders() string {
	// Only logged-in pages make state-changing htmx requests.
	if c.User == nil || c.CSRF == nil {
		return ""
	}
	return `{"X-CSRF-Token":"` + c.CSRF() + `"}`
}

// CSRFToken returns the CSRF token ("" outside a request).
func (c Ctx) CSRFToken() string {
	if c.CSRF == nil {
		return ""
	}
	return c.CSRF()
}

// T translates key into the reader's language.
func (c Ctx) T(key string, args ...any) string { return locales.T(c.Lang, key, args...) }

// Msg renders a stored message in the reader's language, or fallback (the
// record's stored text) when the record has no message.
func (c Ctx) Msg(m locales.Msg, fallback string) string { return m.Or(c.Lang, fallback) }

// N translates a message about count things: with count 1 it uses the
// key's ".one" form where the language has one. count is the first argument.
func (c Ctx) N(key string, count int, args ...any) string {
	if count == 1 && locales.Has(c.Lang, key+".one") {
		key += ".one"
	}
	return locales.T(c.Lang, key, append([]any{count}, args...)...)
}

// Asset returns the hashed URL of a static asset.
func (c Ctx) Asset(name string) string { return static.URL(name) }

// LangURL returns the link that switches to lang and comes back here.
func (c Ctx) LangURL(lang string) string {
	return c.URL(routenames.LangSwitch, lang) + "?next=" + url.QueryEscape(c.Path)
}

// HTMLLang is the value of <html lang>.
func (c Ctx) HTMLLang() string {
	if c.Lang == locales.EN {
		return "en"
	}
	return "zh-CN"
}

// CityName returns a city's name in the reader's language, or the slug.
func (c Ctx) CityName(slug string) string {
	if city, ok := catalog.CityBySlug(slug); ok {
		return city.Name(c.Lang)
	}
	return slug
}

// RegionName returns a region's name in the reader's language, or the slug.
func (c Ctx) RegionName(slug string) string {
	if r, ok := catalog.RegionBySlug(slug); ok {
		return r.Name(c.Lang)
	}
	return slug
}
