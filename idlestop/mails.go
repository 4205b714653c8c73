package idlestop

import (
	"fmt"
	"time"

	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// notes are the lines a mail adds about where its setting and figures
// come from: the lab's policy, the node's NVML or a simulation.
func (n notice) notes(lang string) string {
	s := ""
	if n.lab {
		s += "\n\n" + locales.T(lang, "idle.mail.lab_note")
	}
	if n.simulated {
		s += "\n\n" + locales.T(lang, "idle.mail.simulated_note")
	} else {
		s += "\n\n" + locales.T(lang, "idle.mail.measured_note")
	}
	return s
}

// rentalURL is the rental's page, where the setting is changed.
func (s *Service) rentalURL(r *models.Rental) string {
	return fmt.Sprintf("%s/rentals/%d", s.Rentals.BaseURL, r.ID)
}

// warningMail tells a renter that every GPU of the rental has idled for
// idleMin minutes and that it stops at n.stopsAt unless they are used.
func (s *Service) warningMail(u *models.User, r *models.Rental, n notice, idleMin int, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	at := n.stopsAt.In(pricing.Shanghai).Format("2006-01-02 15:04")
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "idle.mail.warning.subject", r.ID, n.stopsAt.In(pricing.Shanghai).Format("15:04")),
		Body: locales.T(lang, "idle.mail.warning.body", r.ID, n.eff.BelowPct, idleMin, at, n.eff.Minutes, s.rentalURL(r)) +
			n.notes(lang) + locales.T(lang, "idle.mail.signature"),
	}
}

// stoppedMail tells a renter that the rental was stopped for idling, and
// that its files are kept on its volume.
func (s *Service) stoppedMail(u *models.User, r *models.Rental, n notice, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "idle.mail.stopped.subject", r.ID),
		Body: locales.T(lang, "idle.mail.stopped.body", r.ID, n.eff.BelowPct, n.eff.Minutes, n.streak.PeakPct,
			s.Rentals.Volumes().Days(), s.rentalURL(r)) + n.notes(lang) + locales.T(lang, "idle.mail.signature"),
	}
}
