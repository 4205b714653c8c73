package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/offers"
	"suanli/tco"
	"suanli/views"
	"suanli/views/tcopages"
)

// TCO is GET /tco: buying GPUs against renting the cheapest live offers.
// Every input is a query parameter; an invalid one takes its default and
// is explained beside its field (the page still answers 200). The address
// is made canonical (defaults left out) so it can be shared; htmx requests
// get the results fragment alone.
func (h *Handler) TCO(c echo.Context) error {
	raw := c.QueryParams()
	q, errs := tco.ParseQuery(raw)
	v := q.Values()
	for _, e := range errs {
		// A rejected value stays in the address, so a shared link shows
		// the same message.
		if s := raw.Get(e.Field); s != "" {
			v.Set(e.Field, s)
		}
	}
	canonical := c.Request().URL.Path
	if len(v) > 0 {
		canonical += "?" + v.Encode()
	}
	if !IsHTMX(c) && canonical != c.Request().URL.RequestURI() {
		return c.Redirect(http.StatusSeeOther, canonical)
	}
	student := IsStudent(c)
	plan, err := tco.Compute(h.Index, q, student)
	if err != nil {
		return err
	}
	refCapex, refRunning := tco.Reference()
	shown := raw.Get("shown_gpu")
	vm := tcopages.TCOVM{
		Plan: tcoPlanVM(plan), Fields: tco.Fields, Errors: fieldMessages(Lang(c), errs), Raw: raw,
		ModelChanged: shown != "" && shown != q.Model.Slug,
		RefCapexFen:  refCapex, RefRunningFen: refRunning,
	}
	c.Response().Header().Add(echo.HeaderVary, "HX-Request")
	vc := ViewCtx(c)
	vc.Path = canonical
	if IsHTMX(c) {
		c.Response().Header().Set("HX-Push-Url", canonical)
		return Render(c, http.StatusOK, tcopages.TCOResults(vc, vm, true))
	}
	return Render(c, http.StatusOK, tcopages.TCOPage(vc, vm))
}

// tcoPlanVM maps a computed comparison to the calculator's view model.
func tcoPlanVM(p tco.Plan) tcopages.TCOPlan {
	from := func(s string) string {
		switch s {
		case tco.FromOffer:
			return tcopages.TCOFromOffer
		case tco.FromEntered:
			return tcopages.TCOFromEntered
		}
		return s
	}
	return tcopages.TCOPlan{
		Model: p.Query.Model, Asked: p.Query.Input,
		OnDemandFen: p.Query.OnDemandFen, OffpeakDiscountPct: p.Query.OffpeakDiscountPct, MonthlyFen: p.Query.MonthlyFen,
		Student: p.Student, Listed: p.Offers.Listed,
		OnDemand: tcoOfferVM(p.Offers.OnDemand), Monthly: tcoOfferVM(p.Offers.Monthly),
		OnDemandFrom: from(p.OnDemandFrom), MonthlyFrom: from(p.MonthlyFrom),
		Input: p.Input, Result: p.Result,
		Interruptible: p.Query.Interruptible, InterruptibleOffer: tcoOfferVM(p.Offers.Interruptible),
	}
}

// tcoOfferVM maps a live offer to what the calculator shows of it (nil
// for none).
func tcoOfferVM(o *offers.Listed) *tcopages.TCOOffer {
	if o == nil {
		return nil
	}
	v := &tcopages.TCOOffer{
		ID: o.ID, PricePerGPUHourFen: o.PricePerGPUHourFen(), MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen(),
		OffpeakDiscountPct: o.OffpeakDiscountPct(), StudentDiscountPct: o.StudentDiscountPct(),
		Demo: o.Demo(), Synthetic: o.Synthetic(),
		Datacenter: views.Name{ZH: o.Datacenter.NameZH, EN: o.Datacenter.NameEN},
	}
	if o.Provider != nil {
		v.Provider = &views.Name{ZH: o.Provider.NameZH, EN: o.Provider.NameEN}
	}
	if o.Interruptible != nil {
		v.ClearingFen = o.Interruptible.ClearingFen
	}
	return v
}
