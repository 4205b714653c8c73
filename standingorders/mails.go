package standingorders

import (
	"fmt"
	"time"

	"suanli/catalog"
	"suanli/locales"
	"suanli/models"
	"suanli/models/orderstore"
	"suanli/pricing"
)

// PagePath is the standing orders' page, which mails link to.
const PagePath = "/standing-orders"

func (s *Service) baseURL() string { return s.Rentals.BaseURL }

// cityName is a city's name in lang, or its slug.
func cityName(lang, slug string) string {
	if c, ok := catalog.CityBySlug(slug); ok {
		return c.Name(lang)
	}
	return slug
}

func mail(u *models.User, now time.Time, subject, body string) *models.OutboxMail {
	return &models.OutboxMail{ToAddr: u.Email, Lang: u.MailLang(), CreatedAt: now, Subject: subject,
		Body: body + locales.T(u.MailLang(), "so.mail.signature")}
}

// filledMail tells the owner that the order rented r on the offer.
func (s *Service) filledMail(u *models.User, o *orderstore.Order, r *models.Rental, f *free, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	note := ""
	if r.BidPerGPUHourFen != nil {
		note = locales.T(lang, "so.mail.interruptible_note")
	}
	gpu := catalog.GPUName(o.GPUModel)
	return mail(u, now, locales.T(lang, "so.mail.filled.subject", o.ID, o.GPUs, gpu, r.ID),
		locales.T(lang, "so.mail.filled.body", o.ID, o.GPUs, gpu, cityName(lang, f.offer.City), r.ID,
			pricing.FenToYuanString(r.PricePerGPUHourFen), note, fmt.Sprintf("%s/rentals/%d", s.baseURL(), r.ID)))
}

// notifyMail tells the owner of a notify order that GPUs matching it are
// free on the offer.
func (s *Service) notifyMail(u *models.User, o *orderstore.Order, f *free, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	gpu := catalog.GPUName(o.GPUModel)
	return mail(u, now, locales.T(lang, "so.mail.notify.subject", o.GPUs, gpu, o.ID),
		locales.T(lang, "so.mail.notify.body", o.ID, o.GPUs, gpu, cityName(lang, f.offer.City), pricing.FenToYuanString(f.price(o.Student)),
			*f.pool, fmt.Sprintf("%s/offers/%d", s.baseURL(), f.offer.ID)))
}

// failedMail tells the owner that GPUs matching the order were free but
// its rent was refused, and why.
func (s *Service) failedMail(u *models.User, o *orderstore.Order, f *free, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	return mail(u, now, locales.T(lang, "so.mail.failed.subject", o.ID),
		locales.T(lang, "so.mail.failed.body", o.ID, o.GPUs, catalog.GPUName(o.GPUModel), cityName(lang, f.offer.City),
			o.FailureMsg.Or(lang, o.Failure), s.baseURL()+PagePath))
}

// expiredMail tells the owner that the order expired unmatched.
func (s *Service) expiredMail(u *models.User, o *orderstore.Order, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	return mail(u, now, locales.T(lang, "so.mail.expired.subject", o.ID),
		locales.T(lang, "so.mail.expired.body", o.ID, o.GPUs, catalog.GPUName(o.GPUModel),
			o.ExpiresAt.In(pricing.Shanghai).Format("2006-01-02 15:04"), s.baseURL()+PagePath))
}
