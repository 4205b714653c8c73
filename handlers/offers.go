package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/handlers/witnessvm"
	"suanli/images"
	"suanli/locales"
	"suanli/models"
	"suanli/offers"
	"suanli/sla"
	"suanli/views/pages"
	"suanli/witness"
)

// OffersList is GET /offers (and /): the filterable offer list. Invalid
// parameters are ignored and explained beside their field; htmx requests
// get the results fragment alone.
func (h *Handler) OffersList(c echo.Context) error {
	raw := c.QueryParams()
	// A GET form sends its empty fields too; the shareable URL leaves them out.
	clean, hadEmpty := withoutEmpty(raw)
	canonical := c.Request().URL.Path
	if len(clean) > 0 {
		canonical += "?" + clean.Encode()
	}
	if hadEmpty && !IsHTMX(c) {
		return c.Redirect(http.StatusSeeOther, canonical)
	}
	q, errs := offers.ParseQuery(raw, false)
	// Orders and max_price use the price the viewer is shown.
	q.StudentViewer = IsStudent(c)
	res, err := h.Index.Search(q)
	if err != nil {
		e, ok := apperr.As(err)
		if !ok {
			return err
		}
		errs = append(errs, e)
	}
	vm := offersVM(res, fieldMessages(Lang(c), errs), raw, c.QueryString())
	// The same URL answers a page or a fragment; caches must keep both.
	c.Response().Header().Add(echo.HeaderVary, "HX-Request")
	vc := ViewCtx(c)
	vc.Path = canonical
	if IsHTMX(c) {
		// htmx pushes this into the address bar instead of the raw form URL.
		c.Response().Header().Set("HX-Push-Url", canonical)
		return Render(c, http.StatusOK, pages.OfferResults(vc, vm, true))
	}
	return Render(c, http.StatusOK, pages.OffersPage(vc, vm))
}

// withoutEmpty returns the parameters that have a value, and whether any
// had none.
func withoutEmpty(v url.Values) (url.Values, bool) {
	out := url.Values{}
	dropped := false
	for k, vs := range v {
		for _, s := range vs {
			if strings.TrimSpace(s) == "" {
				dropped = true
				continue
			}
			out.Add(k, s)
		}
	}
	return out, dropped
}

// fieldMessages translates field errors, joining several on one field.
func fieldMessages(lang string, errs []*apperr.Error) map[string]string {
	m := map[string]string{}
	for _, e := range errs {
		msg := locales.T(lang, e.Key, e.Args...)
		if prev, ok := m[e.Field]; ok {
			msg = prev + " " + msg
		}
		m[e.Field] = msg
	}
	return m
}

// offerFromPath loads the offer named by the :id parameter, if the public
// list shows it.
func (h *Handler) offerFromPath(c echo.Context) (models.OfferRow, error) {
	id, err := ParseID(c, "id", "offer")
	if err != nil {
		return models.OfferRow{}, err
	}
	return h.DB.PublicOfferByID(c.Request().Context(), id)
}

// OfferShow is GET /offers/{id}: the whole offer.
func (h *Handler) OfferShow(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	m, _ := catalog.GPUModelBySlug(row.GPUModel)
	vm := pages.OfferVM{Offer: offerDetailVM(&row, Lang(c)), GPU: m, QuoteForm: ReadForm(c), QuoteErrors: map[string]string{}}
	vm.Offer.GPU = &m
	for _, k := range []string{"gpus", "hours", "term", "start", "sla", "volume_gb"} {
		vm.QuoteForm.Values[k] = c.QueryParam(k)
	}
	if row.Datacenter.Demo {
		vm.LatencySource = "latency.source.demo"
	}
	if vm.Ping, err = h.latencyProbe(c, row.Datacenter); err != nil {
		return err
	}
	// The quote panel: defaults (one GPU for one hour from now) until the
	// renter changes them; bad values are explained beside their field.
	in := offers.QuoteInputFrom(c.QueryParams())
	in.Seconds = ""
	student := IsStudent(c)
	if q, err := offers.Quote(row.Offer, in, student, h.DB.Now()); err == nil {
		vm.Quote = &q
		vm.EarlyStopKey = offers.EarlyStopOf(q.Term).Key
	} else if e, ok := apperr.As(err); ok && e.Code == apperr.EINVALID {
		vm.QuoteErrors[e.Field] = locales.T(Lang(c), e.Key, e.Args...)
	} else {
		return err
	}
	vc := ViewCtx(c)
	if IsHTMX(c) {
		return Render(c, http.StatusOK, pages.QuoteResult(vc, vm, true))
	}
	imgs, err := images.ForOffer(c.Request().Context(), h.DB, row.ID)
	if err != nil {
		return err
	}
	vm.Images = offerImagesVM(imgs)
	bid, err := offers.InterruptibleOf(c.Request().Context(), h.DB, &row.Offer)
	if err != nil {
		return err
	}
	vm.Offer.Interruptible = (*pages.OfferInterruptible)(bid)
	if len(imgs) > 0 {
		vm.DriverCUDA = imgs[0].DriverCUDA
	}
	sm, err := (&witness.Service{DB: h.DB}).Summary(c.Request().Context(), row.ID)
	if err != nil {
		return err
	}
	nodeSm, err := (&witness.Service{DB: h.DB}).NodeSummary(c.Request().Context(), row.NodeID)
	if err != nil {
		return err
	}
	vm.Witnesses = witnessvm.Offer(&row, sm, nodeSm)
	if r := vm.Offer.Report; r != nil {
		r.Status = witnessvm.Status(&row, nodeSm)
	}
	return Render(c, http.StatusOK, pages.OfferPage(vc, vm))
}

// DatacenterShow is GET /datacenters/{slug}: the datacentre and its offers.
func (h *Handler) DatacenterShow(c echo.Context) error {
	dc, lat, err := h.DB.DatacenterBySlug(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	student := IsStudent(c)
	res, err := h.Index.Search(offers.Query{DatacenterID: dc.ID, Sort: offers.SortPrice, Page: 1, PerPage: offers.MaxPerPage, StudentViewer: student})
	if err != nil {
		return err
	}
	vm := pages.DatacenterVM{Datacenter: datacenterInfoVM(&dc, Lang(c)), Latency: lat, Offers: offerListVM(res)}
	up, err := sla.DatacenterUptime(c.Request().Context(), h.DB, dc.ID)
	if err != nil {
		return err
	}
	vm.Uptime = uptimeVM(up)
	if vm.Ping, err = h.latencyProbe(c, &dc); err != nil {
		return err
	}
	if dc.Demo {
		vm.LatencySource = "latency.source.demo"
	}
	return Render(c, http.StatusOK, pages.DatacenterPage(ViewCtx(c), vm))
}
